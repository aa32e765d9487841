package validation

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MaxSecretSize is the largest total size of a secret's or configmap's data.
const MaxSecretSize = 1 * 1024 * 1024

const immutableWhenSet = "field is immutable when `immutable` is set"

var metadataPath = field.NewPath("metadata")

// ValidateNamespace validates a namespace: a DNS-1123 label name and valid
// spec finalizers.
func ValidateNamespace(ns *v1.Namespace) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&ns.ObjectMeta, false, DNSLabelName, metadataPath)
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, validateFinalizerName(string(f), field.NewPath("spec", "finalizers").Index(i))...)
	}
	return errs
}

// standardFinalizers are the finalizer names that need no domain prefix.
var standardFinalizers = sets.New(string(v1.FinalizerKubernetes), metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents)

func validateFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	errs := apimachineryvalidation.ValidateFinalizerName(name, fldPath)
	if !strings.Contains(name, "/") && !standardFinalizers.Has(name) {
		errs = append(errs, field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified"))
	}
	return errs
}

// ValidateNamespaceUpdate validates a namespace update (metadata rules; the
// strategy keeps spec and status).
func ValidateNamespaceUpdate(newNs, oldNs *v1.Namespace) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newNs.ObjectMeta, &oldNs.ObjectMeta, metadataPath)
	return append(errs, ValidateNamespace(newNs)...)
}

// ValidateNamespaceStatusUpdate: the phase is Active while the namespace is
// not being deleted and Terminating once it is.
func ValidateNamespaceStatusUpdate(newNs, oldNs *v1.Namespace) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newNs.ObjectMeta, &oldNs.ObjectMeta, metadataPath)
	if newNs.DeletionTimestamp.IsZero() {
		if newNs.Status.Phase != v1.NamespaceActive {
			errs = append(errs, field.Invalid(field.NewPath("status", "Phase"), newNs.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty"))
		}
	} else if newNs.Status.Phase != v1.NamespaceTerminating {
		errs = append(errs, field.Invalid(field.NewPath("status", "Phase"), newNs.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
	}
	return errs
}

// ValidateNode validates a node: a DNS-1123 subdomain name, taints (key,
// value, effect, unique key/effect pairs), pod CIDRs, and non-negative
// capacity and allocatable quantities.
func ValidateNode(node *v1.Node) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&node.ObjectMeta, false, DNSSubdomainName, metadataPath)
	specPath := field.NewPath("spec")
	errs = append(errs, validateTaints(node.Spec.Taints, specPath.Child("taints"))...)
	cidrs := node.Spec.PodCIDRs
	if len(cidrs) == 0 && node.Spec.PodCIDR != "" {
		cidrs = []string{node.Spec.PodCIDR}
	}
	for i, c := range cidrs {
		errs = append(errs, validation.IsValidCIDR(specPath.Child("podCIDRs").Index(i), c)...)
	}
	if len(cidrs) > 2 {
		errs = append(errs, field.Invalid(specPath.Child("podCIDRs"), cidrs, "may specify no more than one CIDR for each IP family"))
	}
	if node.Spec.PodCIDR != "" && len(node.Spec.PodCIDRs) > 0 && node.Spec.PodCIDRs[0] != node.Spec.PodCIDR {
		errs = append(errs, field.Invalid(specPath.Child("podCIDRs").Index(0), node.Spec.PodCIDRs[0], "must be the same as `podCIDR`"))
	}
	statusPath := field.NewPath("status")
	for _, l := range []struct {
		name string
		list v1.ResourceList
	}{{"capacity", node.Status.Capacity}, {"allocatable", node.Status.Allocatable}} {
		for name, q := range l.list {
			p := statusPath.Child(l.name).Key(string(name))
			errs = append(errs, validateQualifiedName(string(name), p)...)
			errs = append(errs, validateResourceQuantityValue(string(name), q, p)...)
		}
	}
	for i, a := range node.Status.Addresses {
		if a.Type == "" {
			errs = append(errs, field.Required(statusPath.Child("addresses").Index(i).Child("type"), ""))
		}
	}
	return errs
}

func validateTaints(taints []v1.Taint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, t := range taints {
		p := fldPath.Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		if t.Value != "" {
			errs = append(errs, validateLabelValue(t.Value, p.Child("value"))...)
		}
		if t.Effect == "" {
			errs = append(errs, field.Required(p.Child("effect"), ""))
		} else {
			errs = append(errs, validateTaintEffect(t.Effect, p.Child("effect"))...)
		}
		key := t.Key + "/" + string(t.Effect)
		if seen.Has(key) {
			errs = append(errs, field.Duplicate(p, t))
		}
		seen.Insert(key)
	}
	return errs
}

// ValidateNodeUpdate validates a node update: podCIDRs and providerID may
// only be set once.
func ValidateNodeUpdate(newNode, oldNode *v1.Node) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newNode.ObjectMeta, &oldNode.ObjectMeta, metadataPath)
	errs = append(errs, ValidateNode(newNode)...)
	if len(oldNode.Spec.PodCIDRs) > 0 && !reflect.DeepEqual(newNode.Spec.PodCIDRs, oldNode.Spec.PodCIDRs) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
	}
	if oldNode.Spec.ProviderID != "" && newNode.Spec.ProviderID != oldNode.Spec.ProviderID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	return errs
}

// ValidateConfigMap validates a configmap: valid and non-overlapping keys in
// data and binaryData, at most 1 MiB in all.
func ValidateConfigMap(cm *v1.ConfigMap) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&cm.ObjectMeta, true, DNSSubdomainName, metadataPath)
	total := 0
	for key, value := range cm.Data {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, msg))
		}
		total += len(value)
	}
	for key, value := range cm.BinaryData {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(key), key, msg))
		}
		if _, dup := cm.Data[key]; dup {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(key), key, "duplicate of key present in data"))
		}
		total += len(value)
	}
	if total > MaxSecretSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", MaxSecretSize))
	}
	return errs
}

// ValidateConfigMapUpdate: an immutable configmap keeps its data and stays
// immutable.
func ValidateConfigMapUpdate(newCM, oldCM *v1.ConfigMap) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newCM.ObjectMeta, &oldCM.ObjectMeta, metadataPath)
	if oldCM.Immutable != nil && *oldCM.Immutable {
		if newCM.Immutable == nil || !*newCM.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableWhenSet))
		}
		if !reflect.DeepEqual(newCM.Data, oldCM.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableWhenSet))
		}
		if !reflect.DeepEqual(newCM.BinaryData, oldCM.BinaryData) {
			errs = append(errs, field.Forbidden(field.NewPath("binaryData"), immutableWhenSet))
		}
	}
	return append(errs, ValidateConfigMap(newCM)...)
}

// ValidateSecret validates a secret: valid keys, at most 1 MiB, and the
// keys each built-in type requires.
func ValidateSecret(s *v1.Secret) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&s.ObjectMeta, true, DNSSubdomainName, metadataPath)
	dataPath := field.NewPath("data")
	total := 0
	for key, value := range s.Data {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, msg))
		}
		total += len(value)
	}
	if total > MaxSecretSize {
		errs = append(errs, field.TooLong(dataPath, "", MaxSecretSize))
	}
	switch s.Type {
	case v1.SecretTypeServiceAccountToken:
		if s.Annotations[v1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(metadataPath.Child("annotations").Key(v1.ServiceAccountNameKey), ""))
		}
	case v1.SecretTypeDockercfg:
		errs = append(errs, validateJSONKey(s.Data, v1.DockerConfigKey, dataPath)...)
	case v1.SecretTypeDockerConfigJson:
		errs = append(errs, validateJSONKey(s.Data, v1.DockerConfigJsonKey, dataPath)...)
	case v1.SecretTypeBasicAuth:
		_, user := s.Data[v1.BasicAuthUsernameKey]
		_, pass := s.Data[v1.BasicAuthPasswordKey]
		if !user && !pass {
			errs = append(errs, field.Required(dataPath.Key(v1.BasicAuthUsernameKey), ""), field.Required(dataPath.Key(v1.BasicAuthPasswordKey), ""))
		}
	case v1.SecretTypeSSHAuth:
		if len(s.Data[v1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(dataPath.Key(v1.SSHAuthPrivateKey), ""))
		}
	case v1.SecretTypeTLS:
		if _, ok := s.Data[v1.TLSCertKey]; !ok {
			errs = append(errs, field.Required(dataPath.Key(v1.TLSCertKey), ""))
		}
		if _, ok := s.Data[v1.TLSPrivateKeyKey]; !ok {
			errs = append(errs, field.Required(dataPath.Key(v1.TLSPrivateKeyKey), ""))
		}
	}
	return errs
}

func validateJSONKey(data map[string][]byte, key string, dataPath *field.Path) field.ErrorList {
	raw, ok := data[key]
	if !ok {
		return field.ErrorList{field.Required(dataPath.Key(key), "")}
	}
	var v map[string]interface{}
	if err := json.Unmarshal(raw, &v); err != nil {
		return field.ErrorList{field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error())}
	}
	return nil
}

// ValidateSecretUpdate: the type never changes; an immutable secret keeps
// its data and stays immutable.
func ValidateSecretUpdate(newS, oldS *v1.Secret) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newS.ObjectMeta, &oldS.ObjectMeta, metadataPath)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(newS.Type, oldS.Type, field.NewPath("type"))...)
	if oldS.Immutable != nil && *oldS.Immutable {
		if newS.Immutable == nil || !*newS.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableWhenSet))
		}
		if !reflect.DeepEqual(newS.Data, oldS.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableWhenSet))
		}
	}
	return append(errs, ValidateSecret(newS)...)
}

// ValidateServiceAccount validates a service account (a DNS-1123 subdomain name).
func ValidateServiceAccount(sa *v1.ServiceAccount) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&sa.ObjectMeta, true, DNSSubdomainName, metadataPath)
	for i, s := range sa.ImagePullSecrets {
		if s.Name == "" {
			errs = append(errs, field.Required(field.NewPath("imagePullSecrets").Index(i).Child("name"), ""))
		}
	}
	return errs
}

// ValidateServiceAccountUpdate validates a service account update.
func ValidateServiceAccountUpdate(newSA, oldSA *v1.ServiceAccount) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newSA.ObjectMeta, &oldSA.ObjectMeta, metadataPath)
	return append(errs, ValidateServiceAccount(newSA)...)
}

// Limits upstream puts on event fields.
const (
	reportingInstanceLengthLimit = 128
	actionLengthLimit            = 128
	reasonLengthLimit            = 128
	noteLengthLimit              = 1024
)

// ValidateEvent validates a core/v1 event as upstream: legacy events (no
// eventTime) must be in their involved object's namespace; new-style
// events also need reportingController, reportingInstance, action and
// reason, within upstream's length limits.
func ValidateEvent(e *v1.Event) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMeta(&e.ObjectMeta, true, DNSSubdomainName, metadataPath)
	errs = append(errs, validateEventSeries(e.Series != nil, e.Series != nil && e.Series.Count < 2, e.Series != nil && e.Series.LastObservedTime.IsZero(), field.NewPath("series"))...)
	nsPath := field.NewPath("involvedObject", "namespace")
	if e.EventTime.IsZero() {
		if e.InvolvedObject.Namespace == "" {
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else {
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		errs = append(errs, validateNewStyleEvent(e.ReportingController, e.ReportingInstance, e.Action, e.Reason, e.Message, field.NewPath("message"))...)
	}
	for _, msg := range validation.IsDNS1123Subdomain(e.Namespace) {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), e.Namespace, msg))
	}
	return errs
}

func validateNewStyleEvent(controller, instance, action, reason, note string, notePath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if controller == "" {
		errs = append(errs, field.Required(field.NewPath("reportingController"), ""))
	}
	errs = append(errs, validateQualifiedName(controller, field.NewPath("reportingController"))...)
	if instance == "" {
		errs = append(errs, field.Required(field.NewPath("reportingInstance"), ""))
	}
	if len(instance) > reportingInstanceLengthLimit {
		errs = append(errs, field.Invalid(field.NewPath("reportingInstance"), "", fmt.Sprintf("can have at most %v characters", reportingInstanceLengthLimit)))
	}
	if action == "" {
		errs = append(errs, field.Required(field.NewPath("action"), ""))
	}
	if len(action) > actionLengthLimit {
		errs = append(errs, field.Invalid(field.NewPath("action"), "", fmt.Sprintf("can have at most %v characters", actionLengthLimit)))
	}
	if reason == "" {
		errs = append(errs, field.Required(field.NewPath("reason"), ""))
	}
	if len(reason) > reasonLengthLimit {
		errs = append(errs, field.Invalid(field.NewPath("reason"), "", fmt.Sprintf("can have at most %v characters", reasonLengthLimit)))
	}
	if len(note) > noteLengthLimit {
		errs = append(errs, field.Invalid(notePath, "", fmt.Sprintf("can have at most %v characters", noteLengthLimit)))
	}
	return errs
}

func validateEventSeries(present, tooFew, noLastObserved bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !present {
		return nil
	}
	if tooFew {
		errs = append(errs, field.Invalid(fldPath.Child("count"), "", "should be at least 2"))
	}
	if noLastObserved {
		errs = append(errs, field.Required(fldPath.Child("lastObservedTime"), ""))
	}
	return errs
}

// ValidateEventUpdate: an event's identity fields (involvedObject, reason,
// source, reporting fields, type, eventTime…) do not change; count,
// lastTimestamp, message and series may.
func ValidateEventUpdate(newE, oldE *v1.Event) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&newE.ObjectMeta, &oldE.ObjectMeta, metadataPath)
	errs = append(errs, ValidateEvent(newE)...)
	immutable := []struct {
		path     string
		new, old interface{}
	}{
		{"involvedObject", newE.InvolvedObject, oldE.InvolvedObject},
		{"reason", newE.Reason, oldE.Reason},
		{"source", newE.Source, oldE.Source},
		{"firstTimestamp", newE.FirstTimestamp, oldE.FirstTimestamp},
		{"type", newE.Type, oldE.Type},
		{"eventTime", newE.EventTime, oldE.EventTime},
		{"action", newE.Action, oldE.Action},
		{"related", newE.Related, oldE.Related},
		{"reportingController", newE.ReportingController, oldE.ReportingController},
		{"reportingInstance", newE.ReportingInstance, oldE.ReportingInstance},
	}
	for _, f := range immutable {
		if !apiequality.Semantic.DeepEqual(f.new, f.old) {
			errs = append(errs, field.Invalid(field.NewPath(f.path), f.new, "field is immutable"))
		}
	}
	return errs
}
