package framework

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
)

// AffinityTerm is a parsed pod (anti-)affinity term.
type AffinityTerm struct {
	// Namespaces are the namespaces named by the term (the pod's own when
	// neither namespaces nor a namespace selector is given).
	Namespaces sets.Set[string]
	// NamespaceSelector selects further namespaces by their labels; nil
	// selects none, an empty selector all.
	NamespaceSelector labels.Selector
	// Selector matches the pods' labels (matchLabelKeys and
	// mismatchLabelKeys already merged in).
	Selector    labels.Selector
	TopologyKey string
}

// Matches reports whether the term selects pod, given its namespace's labels.
func (t *AffinityTerm) Matches(pod *v1.Pod, nsLabels labels.Set) bool {
	if t.Namespaces.Has(pod.Namespace) || (t.NamespaceSelector != nil && t.NamespaceSelector.Matches(nsLabels)) {
		return t.Selector.Matches(labels.Set(pod.Labels))
	}
	return false
}

// WeightedAffinityTerm is a preferred term with its weight.
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// PodInfo is a pod with what the plugins derive from its spec, computed once.
type PodInfo struct {
	Pod *v1.Pod
	// Requests are the pod's effective requests; NonZeroRequests the same
	// with the scoring defaults for unset cpu and memory.
	Requests        Resource
	NonZeroRequests Resource
	// The pod's parsed affinity terms.
	RequiredAffinityTerms      []AffinityTerm
	RequiredAntiAffinityTerms  []AffinityTerm
	PreferredAffinityTerms     []WeightedAffinityTerm
	PreferredAntiAffinityTerms []WeightedAffinityTerm
}

// NewPodInfo derives a PodInfo; a malformed label selector in the pod's
// affinity is an error naming the field.
func NewPodInfo(pod *v1.Pod) (*PodInfo, error) {
	pi := &PodInfo{Pod: pod, Requests: PodRequests(pod), NonZeroRequests: PodNonZeroRequests(pod)}
	a := pod.Spec.Affinity
	if a == nil {
		return pi, nil
	}
	var err error
	if a.PodAffinity != nil {
		if pi.RequiredAffinityTerms, err = affinityTerms(pod, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution"); err != nil {
			return nil, err
		}
		if pi.PreferredAffinityTerms, err = weightedTerms(pod, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution, "spec.affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution"); err != nil {
			return nil, err
		}
	}
	if a.PodAntiAffinity != nil {
		if pi.RequiredAntiAffinityTerms, err = affinityTerms(pod, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution"); err != nil {
			return nil, err
		}
		if pi.PreferredAntiAffinityTerms, err = weightedTerms(pod, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution, "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution"); err != nil {
			return nil, err
		}
	}
	return pi, nil
}

// HasAffinity reports whether the pod has any pod (anti-)affinity term.
func (pi *PodInfo) HasAffinity() bool {
	return len(pi.RequiredAffinityTerms)+len(pi.RequiredAntiAffinityTerms)+len(pi.PreferredAffinityTerms)+len(pi.PreferredAntiAffinityTerms) > 0
}

func affinityTerms(pod *v1.Pod, terms []v1.PodAffinityTerm, path string) ([]AffinityTerm, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	out := make([]AffinityTerm, 0, len(terms))
	for i := range terms {
		t, err := NewAffinityTerm(pod, &terms[i])
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %w", path, i, err)
		}
		out = append(out, t)
	}
	return out, nil
}

func weightedTerms(pod *v1.Pod, terms []v1.WeightedPodAffinityTerm, path string) ([]WeightedAffinityTerm, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	out := make([]WeightedAffinityTerm, 0, len(terms))
	for i := range terms {
		t, err := NewAffinityTerm(pod, &terms[i].PodAffinityTerm)
		if err != nil {
			return nil, fmt.Errorf("%s[%d].podAffinityTerm: %w", path, i, err)
		}
		out = append(out, WeightedAffinityTerm{AffinityTerm: t, Weight: terms[i].Weight})
	}
	return out, nil
}

// NewAffinityTerm parses a term of pod's affinity: its selector, with the
// pod's values for matchLabelKeys (In) and mismatchLabelKeys (NotIn)
// merged in, and its namespaces.
func NewAffinityTerm(pod *v1.Pod, term *v1.PodAffinityTerm) (AffinityTerm, error) {
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return AffinityTerm{}, fmt.Errorf("labelSelector: %w", err)
	}
	if term.LabelSelector != nil {
		sel, err = MergeLabelKeys(sel, pod.Labels, term.MatchLabelKeys, term.MismatchLabelKeys)
		if err != nil {
			return AffinityTerm{}, err
		}
	}
	t := AffinityTerm{Selector: sel, TopologyKey: term.TopologyKey, Namespaces: sets.New(term.Namespaces...)}
	if term.NamespaceSelector != nil {
		ns, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
		if err != nil {
			return AffinityTerm{}, fmt.Errorf("namespaceSelector: %w", err)
		}
		t.NamespaceSelector = ns
	} else if len(term.Namespaces) == 0 {
		t.Namespaces.Insert(pod.Namespace)
	}
	return t, nil
}

// MergeLabelKeys adds "key in (value)" for each matchKey and "key notin
// (value)" for each mismatchKey the pod has a label for.
func MergeLabelKeys(sel labels.Selector, podLabels map[string]string, matchKeys, mismatchKeys []string) (labels.Selector, error) {
	for _, k := range matchKeys {
		if v, ok := podLabels[k]; ok {
			r, err := labels.NewRequirement(k, selection.In, []string{v})
			if err != nil {
				return nil, fmt.Errorf("matchLabelKeys %q: %w", k, err)
			}
			sel = sel.Add(*r)
		}
	}
	for _, k := range mismatchKeys {
		if v, ok := podLabels[k]; ok {
			r, err := labels.NewRequirement(k, selection.NotIn, []string{v})
			if err != nil {
				return nil, fmt.Errorf("mismatchLabelKeys %q: %w", k, err)
			}
			sel = sel.Add(*r)
		}
	}
	return sel, nil
}
