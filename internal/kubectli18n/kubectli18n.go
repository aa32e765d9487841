// Package kubectli18n loads kubectl's message translations only in a
// process that runs kubectl.
//
// kubectl translates its help texts in package variables, so the first
// translated string, during package initialization, loads the whole
// catalogue (≈4 MB of heap, kept for the life of the process). berth is one
// binary: without this package the agent and the server would carry that
// catalogue too. Its initializer runs before kubectl's (it sorts first and
// depends only on kubectl's i18n package) and replaces kubectl's loader with
// one that loads the catalogue only for `berth kubectl`; every other role
// gets kubectl's untranslated (English) strings.
package kubectli18n

import (
	"os"

	"k8s.io/kubectl/pkg/util/i18n"
)

// Subcommand is the berth subcommand that runs kubectl.
const Subcommand = "kubectl"

func init() {
	if err := i18n.SetLoadTranslationsFunc(func() error {
		if !RunsKubectl(os.Args) {
			return nil
		}
		return i18n.LoadTranslations("kubectl", nil)
	}); err != nil {
		panic("kubectli18n: " + err.Error())
	}
}

// RunsKubectl tells whether a berth command line (os.Args) runs kubectl.
func RunsKubectl(args []string) bool {
	return len(args) > 1 && args[1] == Subcommand
}
