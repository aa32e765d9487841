package job

import (
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// noIndex is the completion index of a pod without a valid one.
const noIndex = -1

// completionIndex returns the pod's batch.kubernetes.io/job-completion-index
// annotation, or noIndex.
func completionIndex(p *corev1.Pod) int {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return noIndex
	}
	ix, err := strconv.Atoi(v)
	if err != nil || ix < 0 {
		return noIndex
	}
	return ix
}

// parseIndexes reads an index list ("1,3-5") into a set, skipping
// malformed intervals and indexes ≥ completions, as upstream.
func parseIndexes(list string, completions int) sets.Set[int] {
	out := sets.New[int]()
	if list == "" {
		return out
	}
	for _, iv := range strings.Split(list, ",") {
		parts := strings.Split(iv, "-")
		if len(parts) > 2 {
			continue
		}
		first, err := strconv.Atoi(parts[0])
		if err != nil {
			continue
		}
		last := first
		if len(parts) == 2 {
			if last, err = strconv.Atoi(parts[1]); err != nil {
				continue
			}
		}
		for i := first; i <= last && i < completions; i++ {
			if i >= 0 {
				out.Insert(i)
			}
		}
	}
	return out
}

// formatIndexes writes a set as upstream's ordered interval list
// ("1,3-5"); consecutive runs of two or more become intervals.
func formatIndexes(s sets.Set[int]) string {
	ix := sets.List(s)
	var b strings.Builder
	for i := 0; i < len(ix); {
		j := i
		for j+1 < len(ix) && ix[j+1] == ix[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(ix[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(ix[j]))
		}
		i = j + 1
	}
	return b.String()
}

// firstPending returns up to count indexes below completions that are in
// none of the taken sets, smallest first.
func firstPending(count, completions int, taken ...sets.Set[int]) []int {
	var out []int
	for ix := 0; ix < completions && len(out) < count; ix++ {
		if !slices.ContainsFunc(taken, func(s sets.Set[int]) bool { return s.Has(ix) }) {
			out = append(out, ix)
		}
	}
	return out
}
