// Command kubectl is upstream kubectl of one release, its main as
// k8s.io/kubernetes/cmd/kubectl writes it for 1.27 to 1.33 (a release whose
// main differs has its own in hack/kubectl/1.XX); ../build.sh builds it
// against a release's go.mod.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	// The client auth plugins (exec, OIDC), as upstream's kubectl.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
}
