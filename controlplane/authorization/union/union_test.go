package union_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"berth/controlplane/authorization/union"
)

// fixed is an authorizer returning one answer and counting calls.
type fixed struct {
	d     authorizer.Decision
	err   error
	calls int
}

func (f *fixed) Authorize(context.Context, authorizer.Attributes) (authorizer.Decision, string, error) {
	f.calls++
	return f.d, f.d.String(), f.err
}
func (f *fixed) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	return authorizer.ConditionsAwareDecisionFromParts(f.Authorize(ctx, a))
}
func (f *fixed) EvaluateConditions(context.Context, authorizer.ConditionsAwareDecision, authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return authorizer.DecisionDeny, "", authorizer.ErrorConditionEvaluationNotSupported
}
func (f *fixed) RulesFor(context.Context, user.Info, string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{Verbs: []string{f.d.String()}}}, nil, false, nil
}

func TestUnion(t *testing.T) {
	boom := errors.New("boom")
	alice := &user.DefaultInfo{Name: "alice"}
	cases := []struct {
		name      string
		first     *fixed
		second    *fixed
		u         user.Info
		want      authorizer.Decision
		wantCalls [2]int
		wantErr   bool
	}{
		{"first allows", &fixed{d: authorizer.DecisionAllow}, &fixed{d: authorizer.DecisionDeny}, alice, authorizer.DecisionAllow, [2]int{1, 0}, false},
		{"first denies", &fixed{d: authorizer.DecisionDeny}, &fixed{d: authorizer.DecisionAllow}, alice, authorizer.DecisionDeny, [2]int{1, 0}, false},
		{"no opinion falls through", &fixed{d: authorizer.DecisionNoOpinion}, &fixed{d: authorizer.DecisionAllow}, alice, authorizer.DecisionAllow, [2]int{1, 1}, false},
		{"error with no opinion falls through", &fixed{d: authorizer.DecisionNoOpinion, err: boom}, &fixed{d: authorizer.DecisionAllow}, alice, authorizer.DecisionAllow, [2]int{1, 1}, false},
		{"all no opinion keeps errors", &fixed{d: authorizer.DecisionNoOpinion, err: boom}, &fixed{d: authorizer.DecisionNoOpinion}, alice, authorizer.DecisionNoOpinion, [2]int{1, 1}, true},
		{"system:masters always allowed", &fixed{d: authorizer.DecisionDeny}, &fixed{d: authorizer.DecisionDeny},
			&user.DefaultInfo{Name: "admin", Groups: []string{"system:masters"}}, authorizer.DecisionAllow, [2]int{0, 0}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, err := union.New(union.Config{Authorizers: []authorizer.Authorizer{tc.first, tc.second}})
			if err != nil {
				t.Fatal(err)
			}
			d, _, err := u.Authorize(context.Background(), authorizer.AttributesRecord{User: tc.u, Verb: "get", Resource: "pods", ResourceRequest: true})
			if d != tc.want {
				t.Fatalf("decision %v, want %v", d, tc.want)
			}
			if (err != nil) != tc.wantErr || (tc.wantErr && !errors.Is(err, boom)) {
				t.Fatalf("err %v, wantErr %v", err, tc.wantErr)
			}
			if got := [2]int{tc.first.calls, tc.second.calls}; got != tc.wantCalls {
				t.Fatalf("calls %v, want %v", got, tc.wantCalls)
			}
		})
	}
}

func TestUnionRulesFor(t *testing.T) {
	u, err := union.New(union.Config{Authorizers: []authorizer.Authorizer{&fixed{d: authorizer.DecisionAllow}, &fixed{d: authorizer.DecisionNoOpinion}}})
	if err != nil {
		t.Fatal(err)
	}
	res, _, _, err := u.RulesFor(context.Background(), &user.DefaultInfo{Name: "a"}, "ns")
	if err != nil || len(res) != 2 {
		t.Fatalf("merged rules %v err %v", res, err)
	}
	res, nonRes, _, _ := u.RulesFor(context.Background(), &user.DefaultInfo{Name: "a", Groups: []string{"system:masters"}}, "ns")
	if len(res) != 1 || res[0].GetResources()[0] != "*" || nonRes[0].GetNonResourceURLs()[0] != "*" {
		t.Fatalf("privileged rules %v %v", res, nonRes)
	}
	if _, err := union.New(union.Config{Authorizers: []authorizer.Authorizer{nil}}); err == nil {
		t.Fatal("nil authorizer accepted")
	}
}

func pollUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
