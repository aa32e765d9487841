package harness

import (
	"fmt"
	"os"
	"testing"
)

// RunWithServer is the body of TestMain for a package whose tests share one
// `berth server`: launch starts it with a fresh temp dir (the server's data
// dir goes below it), the tests run, the server is stopped and, if a test
// failed, the tail of its log printed. It returns the exit code.
func RunWithServer(m *testing.M, name string, launch func(dir string) (*Server, error)) int {
	defer RemoveBinary()
	dir, err := os.MkdirTemp("", "berth-"+name+"-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	s, err := launch(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting berth server:", err)
		return 1
	}
	code := m.Run()
	s.Stop()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "--- shared server log (tail) ---\n%s\n", s.LogTail())
	}
	return code
}
