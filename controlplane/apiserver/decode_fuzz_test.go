package apiserver

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"

	"berth/internal/api/scheme"
)

type nobody struct{}

func (nobody) Authenticate(*http.Request) (user.Info, bool) { return nil, false }

// fuzzHandler is a Handler on berth's scheme; decoding and query parsing
// need nothing else.
func fuzzHandler(f *testing.F) *Handler {
	h, err := New(Config{Scheme: scheme.New(), Authenticator: nobody{}})
	if err != nil {
		f.Fatal(err)
	}
	return h
}

// fuzzKinds are the kinds bodies are decoded as (the fuzzer picks one).
var fuzzKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "Pod"},
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "Service"},
	{Group: "batch", Version: "v1", Kind: "Job"},
}

var fuzzContentTypes = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}

var fuzzValidations = []string{metav1.FieldValidationStrict, metav1.FieldValidationWarn, metav1.FieldValidationIgnore}

// FuzzDecodeBody feeds arbitrary request bodies, of each content type the
// apiserver accepts, to the decoding create and update use. A refused body
// is a 400 Bad Request; an accepted one is an object of the kind asked for
// that survives encode → decode unchanged (its JSON is the same after a
// second pass through the decoder, defaults included).
func FuzzDecodeBody(f *testing.F) {
	h := fuzzHandler(f)
	for _, s := range []string{
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"1.0"}}}]}}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]},"extra":1}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","name":"q"}}`,
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 2, selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}}\n",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v"},"binaryData":{"b":"AAE="}}`,
		`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[{"port":80,"targetPort":"http"}]}}`,
		`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"completionMode":"Indexed","completions":3,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}}}`,
		"k8s\x00\n\x0a\n\x02v1\x12\x03Pod\x12\x00",
		`{"apiVersion":"v1","kind":"Secret"}`,
		`null`,
	} {
		for k := range fuzzKinds {
			f.Add([]byte(s), uint8(k), uint8(0), uint8(0))
		}
		f.Add([]byte(s), uint8(0), uint8(1), uint8(1))
		f.Add([]byte(s), uint8(0), uint8(2), uint8(2))
	}
	jsonInfo, _ := runtime.SerializerInfoForMediaType(h.codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	f.Fuzz(func(t *testing.T, body []byte, kind, contentType, validation uint8) {
		want := fuzzKinds[int(kind)%len(fuzzKinds)]
		r := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/x", bytes.NewReader(body))
		r.Header.Set("Content-Type", fuzzContentTypes[int(contentType)%len(fuzzContentTypes)])
		obj, err := h.decodeBody(r, body, want, fuzzValidations[int(validation)%len(fuzzValidations)])
		if err != nil {
			if !apierrors.IsBadRequest(err) && !apierrors.IsUnsupportedMediaType(err) {
				t.Fatalf("decodeBody: %v is neither 400 nor 415", err)
			}
			return
		}
		if gvk := obj.GetObjectKind().GroupVersionKind(); !gvk.Empty() && gvk != want {
			t.Fatalf("decodeBody asked for %v returned a %v", want, gvk)
		}
		first := encodeJSON(t, h, obj, want)
		again, err := h.decodeWith(r.Context(), jsonInfo, first, want, metav1.FieldValidationStrict)
		if err != nil {
			t.Fatalf("the accepted object, encoded as %s, does not decode: %v", first, err)
		}
		if second := encodeJSON(t, h, again, want); !bytes.Equal(first, second) {
			t.Fatalf("encode → decode changed the object:\n%s\n%s", first, second)
		}
	})
}

func encodeJSON(t *testing.T, h *Handler, obj runtime.Object, gvk schema.GroupVersionKind) []byte {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(h.codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	var b bytes.Buffer
	if err := h.codecs.EncoderForVersion(info.Serializer, gvk.GroupVersion()).Encode(obj, &b); err != nil {
		t.Fatalf("encoding the decoded %v: %v", gvk, err)
	}
	return b.Bytes()
}

// FuzzListOptions feeds arbitrary list/watch query strings (label and field
// selectors above all) to the apiserver's parsing. A refused query is a
// 400 or 422 naming the problem; an accepted selector re-formats to a
// string that parses to itself.
func FuzzListOptions(f *testing.F) {
	h := fuzzHandler(f)
	for _, q := range []string{
		"labelSelector=app%3Dweb,tier!%3Dfe,env+in+(a,b),!gone,has",
		"fieldSelector=spec.nodeName%3Dn1,status.phase!%3DRunning",
		"fieldSelector=metadata.name%3D%3Dx&labelSelector=a+notin+(b)",
		"fieldSelector=spec.unknown%3Dx",
		"labelSelector=a%3D%3D%3Db",
		"labelSelector=x+in+()",
		"fieldSelector=a%3D\\,b",
		"watch=true&resourceVersion=10&allowWatchBookmarks=true&timeoutSeconds=30",
		"limit=5&continue=abc&resourceVersionMatch=NotOlderThan&resourceVersion=0",
		"sendInitialEvents=true&watch=1&resourceVersionMatch=NotOlderThan",
		"limit=-1",
		"",
	} {
		f.Add(q, uint8(0))
		f.Add(q, uint8(1))
	}
	resources := []*Resource{
		{GroupVersion: schema.GroupVersion{Version: "v1"}, Resource: "pods", Kind: "Pod"},
		{GroupVersion: schema.GroupVersion{Group: "apps", Version: "v1"}, Resource: "deployments", Kind: "Deployment"},
	}
	f.Fuzz(func(t *testing.T, query string, resource uint8) {
		if _, err := url.ParseQuery(query); err != nil {
			return // no request gets this far with it
		}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.URL.RawQuery = query
		opts, err := h.listOptions(r, resources[int(resource)%len(resources)])
		if err != nil {
			if !apierrors.IsBadRequest(err) && !apierrors.IsInvalid(err) {
				t.Fatalf("listOptions(%q): %v is neither 400 nor 422", query, err)
			}
			return
		}
		if opts.LabelSelector != nil {
			s := opts.LabelSelector.String()
			again, err := labels.Parse(s)
			if err != nil {
				t.Fatalf("label selector of %q re-formats to %q, which does not parse: %v", query, s, err)
			}
			if again.String() != s {
				t.Fatalf("label selector of %q: %q parses to %q", query, s, again.String())
			}
		}
		if opts.FieldSelector != nil {
			s := opts.FieldSelector.String()
			again, err := fields.ParseSelector(s)
			if err != nil {
				t.Fatalf("field selector of %q re-formats to %q, which does not parse: %v", query, s, err)
			}
			if again.String() != s {
				t.Fatalf("field selector of %q: %q parses to %q", query, s, again.String())
			}
		}
	})
}
