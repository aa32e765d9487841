package customresource

import (
	"bytes"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

const (
	openAPIV2       = "/openapi/v2"
	openAPIV3       = "/openapi/v3"
	openAPIV3Prefix = openAPIV3 + "/"
	mimeJSON        = "application/json"
	mimeV2Protobuf  = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
)

// openAPI publishes the custom resources in the OpenAPI documents, as
// upstream's openapi controllers do: /openapi/v2 is the static document
// merged with every served version of every Established CRD; the
// /openapi/v3 index lists the CRDs' group-versions beside the static ones,
// each with its own document. Documents are rebuilt when the set of CRDs
// (or one of them) changes.
type openAPI struct {
	s        *Serving
	static   http.Handler
	staticV2 *spec.Swagger

	mu    sync.Mutex
	key   string // the CRDs the cache was built from
	v2    []byte
	v2pb  []byte
	index []byte
	v3    map[string][]byte // by "apis/<group>/<version>"
}

// OpenAPI wraps the static documents' handler (serving /openapi/v2 and
// /openapi/v3[/...]) with the custom resources' documents; staticV2 is the
// static Swagger 2.0 document.
func (s *Serving) OpenAPI(static http.Handler, staticV2 *spec.Swagger) http.Handler {
	return &openAPI{s: s, static: static, staticV2: staticV2}
}

// decodedV2 is the static document as JSON decodes it: the merge reads
// extensions (the group-version-kinds) in their decoded form.
func (o *openAPI) decodedV2() (*spec.Swagger, error) {
	data, err := json.Marshal(o.staticV2)
	if err != nil {
		return nil, err
	}
	out := &spec.Swagger{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, err
	}
	return out, nil
}

func (o *openAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		o.static.ServeHTTP(w, r)
		return
	}
	crds := o.s.established()
	if len(crds) == 0 {
		o.static.ServeHTTP(w, r)
		return
	}
	if err := o.refresh(crds); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	o.mu.Lock()
	v2, v2pb, index, v3 := o.v2, o.v2pb, o.index, o.v3
	o.mu.Unlock()
	switch {
	case r.URL.Path == openAPIV2:
		w.Header().Add("Vary", "Accept")
		if strings.Contains(r.Header.Get("Accept"), "protobuf") {
			write(w, mimeV2Protobuf, v2pb)
			return
		}
		write(w, mimeJSON, v2)
	case r.URL.Path == openAPIV3:
		write(w, mimeJSON, index)
	case strings.HasPrefix(r.URL.Path, openAPIV3Prefix) && v3[strings.TrimPrefix(r.URL.Path, openAPIV3Prefix)] != nil:
		doc := v3[strings.TrimPrefix(r.URL.Path, openAPIV3Prefix)]
		if hash := r.URL.Query().Get("hash"); hash != "" && hash == docHash(doc) {
			w.Header().Set("Cache-Control", "public, immutable")
		}
		write(w, mimeJSON, doc)
	default:
		o.static.ServeHTTP(w, r)
	}
}

func write(w http.ResponseWriter, contentType string, data []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Etag", `"`+docHash(data)+`"`)
	_, _ = w.Write(data)
}

// docHash is the uppercase hex SHA-512 upstream uses for ETags and ?hash=.
func docHash(data []byte) string {
	return fmt.Sprintf("%X", sha512.Sum512(data))
}

// refresh rebuilds the documents when the CRDs changed.
func (o *openAPI) refresh(crds []*apiextensionsv1.CustomResourceDefinition) error {
	sort.Slice(crds, func(i, j int) bool { return crds[i].Name < crds[j].Name })
	var key strings.Builder
	for _, crd := range crds {
		fmt.Fprintf(&key, "%s/%s/%d;", crd.UID, crd.Name, crd.Generation)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.key == key.String() {
		return nil
	}
	merged, err := o.decodedV2()
	if err != nil {
		return err
	}
	byGV := map[string][]*spec3.OpenAPI{}
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			opts := builder.Options{IncludeSelectableFields: true}
			v3, err := builder.BuildOpenAPIV3(crd, v.Name, opts)
			if err != nil {
				o.s.cfg.Logger.Warn("OpenAPI v3 of custom resource", "crd", crd.Name, "version", v.Name, "err", err)
				continue
			}
			gv := "apis/" + crd.Spec.Group + "/" + v.Name
			byGV[gv] = append(byGV[gv], v3)
			opts.V2 = true
			v2, err := builder.BuildOpenAPIV2(crd, v.Name, opts)
			if err != nil {
				o.s.cfg.Logger.Warn("OpenAPI v2 of custom resource", "crd", crd.Name, "version", v.Name, "err", err)
				continue
			}
			v2.Definitions = handler.PruneDefaults(v2.Definitions)
			if merged, err = builder.MergeSpecs(merged, v2); err != nil {
				return fmt.Errorf("merging the OpenAPI v2 of %s: %w", crd.Name, err)
			}
		}
	}
	v2, err := json.Marshal(merged)
	if err != nil {
		return err
	}
	doc, err := openapi_v2.ParseDocument(v2)
	if err != nil {
		return fmt.Errorf("OpenAPI v2 to protobuf: %w", err)
	}
	v2pb, err := proto.Marshal(doc)
	if err != nil {
		return err
	}
	index, err := o.staticIndex()
	if err != nil {
		return err
	}
	v3 := map[string][]byte{}
	for gv, specs := range byGV {
		if _, static := index[gv]; static {
			continue
		}
		m, err := builder.MergeSpecsV3(specs...)
		if err != nil {
			return fmt.Errorf("merging the OpenAPI v3 of %s: %w", gv, err)
		}
		data, err := json.Marshal(m)
		if err != nil {
			return err
		}
		v3[gv] = data
		index[gv] = map[string]string{"serverRelativeURL": openAPIV3Prefix + gv + "?hash=" + docHash(data)}
	}
	indexJSON, err := json.Marshal(map[string]any{"paths": index})
	if err != nil {
		return err
	}
	o.key, o.v2, o.v2pb, o.index, o.v3 = key.String(), v2, v2pb, indexJSON, v3
	return nil
}

// staticIndex reads the static /openapi/v3 index.
func (o *openAPI) staticIndex() (map[string]map[string]string, error) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, openAPIV3, nil)
	o.static.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("static OpenAPI v3 index: %d %s", rec.Code, bytes.TrimSpace(rec.Body.Bytes()))
	}
	var index struct {
		Paths map[string]map[string]string `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &index); err != nil {
		return nil, fmt.Errorf("static OpenAPI v3 index: %w", err)
	}
	return index.Paths, nil
}
