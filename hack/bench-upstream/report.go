package main

import (
	"fmt"
	"strings"
)

// markdown is the whole report: machine, versions, each suite's tables and
// the goals.
func (b *bench) markdown() string {
	var s strings.Builder
	m := b.res.Machine
	fmt.Fprintf(&s, "\n## berth vs upstream Kubernetes (make bench-upstream, %s)\n\n", b.res.Started.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&s, "Machine: %d CPUs, %d MiB, Linux %s; load average before %s, after %s (a shared machine: absolute figures are noisy, the ratios come from interleaved runs).\n\n",
		m.CPUs, m.MemTotalMiB, m.Kernel, m.LoadBefore, m.LoadAfter)
	fmt.Fprintf(&s, "Versions: berth %s; %s; etcd %s; containerd %s; %s.\n", b.res.Versions["berth"], b.res.Versions["kubernetes"],
		b.res.Versions["etcd"], b.res.Versions["containerd"], b.res.Versions["go"])
	s.WriteString(b.startupMarkdown())
	s.WriteString(b.e2eMarkdown())
	s.WriteString(b.scaleMarkdown())
	s.WriteString(b.crdMarkdown())
	s.WriteString(b.controllersMarkdown())
	b.res.Goals = append(append(b.startupGoals(), b.e2eGoals()...), b.scaleGoals()...)
	if len(b.res.Goals) > 0 {
		s.WriteString("\n### Goals of issue #20\n\n| goal | measured | target | |\n|---|---|---|---|\n")
		for _, g := range b.res.Goals {
			s.WriteString(g.row() + "\n")
		}
	}
	return s.String()
}
