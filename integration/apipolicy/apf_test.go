package apipolicy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"berth/integration/harness"
)

const (
	headerFlowSchema    = "X-Kubernetes-PF-FlowSchema-UID"
	headerPriorityLevel = "X-Kubernetes-PF-PriorityLevel-UID"
)

// classification is one response's status and PF headers.
type classification struct {
	code               int
	flowSchema, pLevel types.UID
}

// httpAs is a raw HTTP client of the shared server acting as user in
// groups (impersonated by the admin, so classified as that user).
func httpAs(t *testing.T, user string, groups ...string) *http.Client {
	t.Helper()
	cfg := shared.RESTConfig(t)
	if user != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	}
	c, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func get(t *testing.T, c *http.Client, path string) classification {
	t.Helper()
	resp, err := c.Get("https://" + shared.Addr + path)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return classification{resp.StatusCode, types.UID(resp.Header.Get(headerFlowSchema)), types.UID(resp.Header.Get(headerPriorityLevel))}
}

func uids(t *testing.T, admin kubernetes.Interface, fs, pl string) (types.UID, types.UID) {
	t.Helper()
	ctx := context.Background()
	f, err := admin.FlowcontrolV1().FlowSchemas().Get(ctx, fs, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := admin.FlowcontrolV1().PriorityLevelConfigurations().Get(ctx, pl, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return f.UID, p.UID
}

// TestAPFClassifiesWithHeaders: every response carries the UIDs of the
// FlowSchema and priority level that classified it: the admin
// (system:masters) is exempt, a node agent's identity goes to
// system-nodes / system, any other user to global-default.
func TestAPFClassifiesWithHeaders(t *testing.T) {
	t.Parallel()
	admin := shared.Client(t)
	for _, tc := range []struct {
		user   string
		groups []string
		fs, pl string
	}{
		{"", nil, "exempt", "exempt"},
		{"system:node:n1", []string{"system:nodes", "system:authenticated"}, "system-nodes", "system"},
		{"someone", []string{"system:authenticated"}, "global-default", "global-default"},
	} {
		fs, pl := uids(t, admin, tc.fs, tc.pl)
		got := get(t, httpAs(t, tc.user, tc.groups...), "/api/v1/namespaces/default/configmaps")
		if got.flowSchema != fs || got.pLevel != pl {
			t.Errorf("user %q: headers %s=%q %s=%q, want %s (%s) and %s (%s)", tc.user,
				headerFlowSchema, got.flowSchema, headerPriorityLevel, got.pLevel, fs, tc.fs, pl, tc.pl)
		}
	}
}

func priorityLevel(name string, shares int32, response flowcontrolv1.LimitResponse) *flowcontrolv1.PriorityLevelConfiguration {
	zero := int32(0)
	return &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: &shares,
				LendablePercent: &zero, BorrowingLimitPercent: &zero, LimitResponse: response}},
	}
}

func flowSchemaFor(name, user, level string, precedence int32) *flowcontrolv1.FlowSchema {
	return &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         precedence,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: user}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true}},
			}},
		},
	}
}

// TestAPFThrottlesNoisyClient: a noisy client whose flow schema puts it
// in a priority level of (almost) no seats that rejects rather than
// queues gets 429s under many concurrent requests, while a client in
// another level, at the same time, is served every request.
func TestAPFThrottlesNoisyClient(t *testing.T) {
	t.Parallel()
	admin := shared.Client(t)
	ctx := context.Background()
	fc := admin.FlowcontrolV1()
	grantView(t, admin, "apipolicy-apf-view", "noisy", "quiet")
	levels := []*flowcontrolv1.PriorityLevelConfiguration{
		priorityLevel("apipolicy-noisy", 0, flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}),
		priorityLevel("apipolicy-quiet", 50, flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue,
			Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 16, HandSize: 4, QueueLengthLimit: 50}}),
	}
	for _, pl := range levels {
		if _, err := fc.PriorityLevelConfigurations().Create(ctx, pl, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fc.PriorityLevelConfigurations().Delete(ctx, pl.Name, metav1.DeleteOptions{}) })
	}
	for _, fs := range []*flowcontrolv1.FlowSchema{
		flowSchemaFor("apipolicy-noisy", "noisy", "apipolicy-noisy", 200),
		flowSchemaFor("apipolicy-quiet", "quiet", "apipolicy-quiet", 201),
	} {
		if _, err := fc.FlowSchemas().Create(ctx, fs, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fc.FlowSchemas().Delete(ctx, fs.Name, metav1.DeleteOptions{}) })
	}
	_, noisyPL := uids(t, admin, "apipolicy-noisy", "apipolicy-noisy")
	_, quietPL := uids(t, admin, "apipolicy-quiet", "apipolicy-quiet")
	noisy, quiet := httpAs(t, "noisy", "system:authenticated"), httpAs(t, "quiet", "system:authenticated")
	const path = "/api/v1/namespaces/kube-system/configmaps"
	harness.WaitFor(t, 30*time.Second, "the new flow schemas to classify", func() (bool, string) {
		n, q := get(t, noisy, path), get(t, quiet, path)
		return n.pLevel == noisyPL && q.pLevel == quietPL, "noisy " + string(n.pLevel) + ", quiet " + string(q.pLevel)
	})

	const noisyWorkers, quietWorkers, perWorker = 48, 2, 20
	var mu sync.Mutex
	noisyCodes, quietCodes := map[int]int{}, map[int]int{}
	var misclassified []classification
	var wg sync.WaitGroup
	run := func(c *http.Client, codes map[int]int, want types.UID) {
		defer wg.Done()
		for range perWorker {
			got := get(t, c, path)
			mu.Lock()
			codes[got.code]++
			if got.code == http.StatusOK && got.pLevel != want {
				misclassified = append(misclassified, got)
			}
			mu.Unlock()
		}
	}
	for range noisyWorkers {
		wg.Add(1)
		go run(noisy, noisyCodes, noisyPL)
	}
	for range quietWorkers {
		wg.Add(1)
		go run(quiet, quietCodes, quietPL)
	}
	wg.Wait()
	t.Logf("noisy: %v; quiet: %v", noisyCodes, quietCodes)
	if noisyCodes[http.StatusTooManyRequests] == 0 {
		t.Errorf("the noisy client got no 429 in %d requests: %v", noisyWorkers*perWorker, noisyCodes)
	}
	if noisyCodes[http.StatusOK]+noisyCodes[http.StatusTooManyRequests] != noisyWorkers*perWorker {
		t.Errorf("the noisy client got other answers than 200 and 429: %v", noisyCodes)
	}
	if quietCodes[http.StatusOK] != quietWorkers*perWorker {
		t.Errorf("the quiet client was not served every request: %v", quietCodes)
	}
	if len(misclassified) > 0 {
		t.Errorf("responses with another priority level: %v", misclassified)
	}
	// Upstream's metrics tell the same story.
	raw, err := admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`apiserver_flowcontrol_nominal_limit_seats{priority_level="apipolicy-quiet"}`,
		`apiserver_flowcontrol_rejected_requests_total{flow_schema="apipolicy-noisy",priority_level="apipolicy-noisy",reason="concurrency-limit"}`,
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestAPFMandatoryObjects: the mandatory flow schema and priority level
// come back (as new objects) at once when deleted, as does a suggested
// one, and their specs may not change.
func TestAPFMandatoryObjects(t *testing.T) {
	t.Parallel()
	admin := shared.Client(t)
	ctx := context.Background()
	fc := admin.FlowcontrolV1()
	oldFS, oldPL := uids(t, admin, "catch-all", "catch-all")
	oldSuggested, _ := uids(t, admin, "global-default", "global-default")
	for _, del := range []func() error{
		func() error { return fc.FlowSchemas().Delete(ctx, "catch-all", metav1.DeleteOptions{}) },
		func() error { return fc.PriorityLevelConfigurations().Delete(ctx, "catch-all", metav1.DeleteOptions{}) },
		func() error { return fc.FlowSchemas().Delete(ctx, "global-default", metav1.DeleteOptions{}) },
	} {
		if err := del(); err != nil {
			t.Fatal(err)
		}
	}
	harness.WaitFor(t, 30*time.Second, "the deleted objects to be recreated", func() (bool, string) {
		fs, err1 := fc.FlowSchemas().Get(ctx, "catch-all", metav1.GetOptions{})
		pl, err2 := fc.PriorityLevelConfigurations().Get(ctx, "catch-all", metav1.GetOptions{})
		gd, err3 := fc.FlowSchemas().Get(ctx, "global-default", metav1.GetOptions{})
		if err1 != nil || err2 != nil || err3 != nil {
			return false, "missing"
		}
		return fs.UID != oldFS && pl.UID != oldPL && gd.UID != oldSuggested, "not recreated yet"
	})

	fs, err := fc.FlowSchemas().Get(ctx, "exempt", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fs.Spec.MatchingPrecedence = 2
	_, err = fc.FlowSchemas().Update(ctx, fs, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec of 'exempt' must equal the fixed value") {
		t.Fatalf("changing the exempt flow schema: %v", err)
	}
}
