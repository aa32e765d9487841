package cri_test

import (
	"testing"
)

// TestNothingLeftInContainerd runs last (this file sorts last): every test
// above removed what it made, so containerd lists no sandbox and no container.
func TestNothingLeftInContainerd(t *testing.T) {
	c, _ := newClient(t)
	ctx := testContext(t)
	sandboxes, err := c.ListPodSandbox(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	containers, err := c.ListContainers(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sandboxes {
		t.Errorf("sandbox left: %s %v", s.Id, s.GetMetadata())
	}
	for _, ct := range containers {
		t.Errorf("container left: %s %v", ct.Id, ct.GetMetadata())
	}
}
