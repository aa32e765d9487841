package openapi

import (
	"reflect"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Content types of the operations, as upstream lists them.
const (
	mimeJSON           = "application/json"
	mimeYAML           = "application/yaml"
	mimeProtobuf       = "application/vnd.kubernetes.protobuf"
	mimeJSONWatch      = "application/json;stream=watch"
	mimeProtobufWatch  = "application/vnd.kubernetes.protobuf;stream=watch"
	mimeJSONPatch      = "application/json-patch+json"
	mimeMergePatch     = "application/merge-patch+json"
	mimeStrategicPatch = "application/strategic-merge-patch+json"
	mimeApplyPatch     = "application/apply-patch+yaml"
	mimeAny            = "*/*"
	mimeText           = "text/plain"
)

var (
	objectProduces = []string{mimeJSON, mimeYAML, mimeProtobuf}
	listProduces   = []string{mimeJSON, mimeYAML, mimeProtobuf, mimeJSONWatch, mimeProtobufWatch}
	anyConsumes    = []string{mimeAny}
)

// subresourceKind says which operations a subresource has.
type subresourceKind int

const (
	// subresourceReadWrite: get, put and patch.
	subresourceReadWrite subresourceKind = iota
	// subresourceCreate: post only.
	subresourceCreate
	// subresourceLog: get returning text.
	subresourceLog
	// subresourceConnect: get and post, upgraded to a stream.
	subresourceConnect
)

// subresourceSpec describes one subresource's operations.
type subresourceSpec struct {
	kind subresourceKind
	// object is the Go type of the body; nil means the resource's own kind.
	object runtime.Object
	// gvk labels the operations; empty means the resource's own kind.
	gvk schema.GroupVersionKind
	// params are the subresource's own query parameters.
	params func() []spec.Parameter
}

// subresourceOps are the subresources New knows how to describe.
var subresourceOps = map[string]subresourceSpec{
	SubresourceStatus:    {kind: subresourceReadWrite},
	SubresourceApproval:  {kind: subresourceReadWrite},
	SubresourceEphemeral: {kind: subresourceReadWrite},
	SubresourceScale: {kind: subresourceReadWrite, object: &autoscalingv1.Scale{},
		gvk: autoscalingv1.SchemeGroupVersion.WithKind("Scale")},
	SubresourceBinding: {kind: subresourceCreate, object: &corev1.Binding{},
		gvk: corev1.SchemeGroupVersion.WithKind("Binding")},
	SubresourceEviction: {kind: subresourceCreate, object: &policyv1.Eviction{},
		gvk: policyv1.SchemeGroupVersion.WithKind("Eviction")},
	SubresourceLog: {kind: subresourceLog, params: logParams},
	SubresourceExec: {kind: subresourceConnect, gvk: corev1.SchemeGroupVersion.WithKind("PodExecOptions"),
		params: func() []spec.Parameter {
			return append([]spec.Parameter{queryParam("command", "string", "The command to run, one argument per repetition of the parameter.")}, streamParams()...)
		}},
	SubresourceAttach: {kind: subresourceConnect, gvk: corev1.SchemeGroupVersion.WithKind("PodAttachOptions"),
		params: streamParams},
	SubresourcePortForward: {kind: subresourceConnect, gvk: corev1.SchemeGroupVersion.WithKind("PodPortForwardOptions"),
		params: func() []spec.Parameter {
			return []spec.Parameter{queryParam("ports", "integer", "The pod ports to forward to; repeat the parameter for several.")}
		}},
}

// metaTypes are the meta/v1 types the paths refer to.
var (
	deleteOptionsType = reflect.TypeFor[metav1.DeleteOptions]()
	statusType        = reflect.TypeFor[metav1.Status]()
	watchEventType    = reflect.TypeFor[metav1.WatchEvent]()
	patchType         = reflect.TypeFor[metav1.Patch]()
)

// paths builds the Swagger 2.0 paths of the resources.
type paths struct {
	info  Info
	defs  *definitions
	items map[string]spec.PathItem
	// gvks collects the x-kubernetes-group-version-kind of each definition.
	gvks map[string][]schema.GroupVersionKind
}

// v3Key is the OpenAPI v3 index key and URL path of a group-version:
// "api/v1" or "apis/apps/v1".
func v3Key(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// opGroupVersion is the group-version part of upstream's operation IDs:
// "CoreV1", "AppsV1", "RbacAuthorizationV1".
func opGroupVersion(gv schema.GroupVersion) string {
	group := strings.TrimSuffix(gv.Group, ".k8s.io")
	if group == "" {
		group = "core"
	}
	var b strings.Builder
	for _, part := range strings.Split(group, ".") {
		b.WriteString(upperFirst(part))
	}
	b.WriteString(upperFirst(gv.Version))
	return b.String()
}

// tag is upstream's operation tag: "core_v1", "rbacAuthorization_v1".
func tag(gv schema.GroupVersion) string {
	s := opGroupVersion(schema.GroupVersion{Group: gv.Group})
	return strings.ToLower(s[:1]) + s[1:] + "_" + gv.Version
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// ref is a reference to the definition of Go type t.
func (p *paths) ref(t reflect.Type) (*spec.Schema, error) {
	name, err := p.defs.add(t)
	if err != nil {
		return nil, err
	}
	return &spec.Schema{SchemaProps: spec.SchemaProps{Ref: spec.MustCreateRef(definitionsPrefix + name)}}, nil
}

// kindOf records gvk as a kind of the definition of Go type t.
func (p *paths) kindOf(t reflect.Type, gvk schema.GroupVersionKind) error {
	name, err := p.defs.add(t)
	if err != nil {
		return err
	}
	for _, have := range p.gvks[name] {
		if have == gvk {
			return nil
		}
	}
	p.gvks[name] = append(p.gvks[name], gvk)
	return nil
}

func queryParam(name, typ, desc string) spec.Parameter {
	return spec.Parameter{
		ParamProps:        spec.ParamProps{Name: name, In: "query", Description: desc},
		SimpleSchema:      spec.SimpleSchema{Type: typ},
		CommonValidations: spec.CommonValidations{UniqueItems: true},
	}
}

func pathParam(name, desc string) spec.Parameter {
	return spec.Parameter{
		ParamProps:        spec.ParamProps{Name: name, In: "path", Description: desc, Required: true},
		SimpleSchema:      spec.SimpleSchema{Type: "string"},
		CommonValidations: spec.CommonValidations{UniqueItems: true},
	}
}

func bodyParam(s *spec.Schema) spec.Parameter {
	return spec.Parameter{ParamProps: spec.ParamProps{Name: "body", In: "body", Required: true, Schema: s}}
}

func prettyParam() spec.Parameter {
	return queryParam("pretty", "string", "If 'true', the output is indented for reading.")
}

// writeParams are the parameters of every operation that writes.
func writeParams() []spec.Parameter {
	return []spec.Parameter{
		queryParam("dryRun", "string", "When present, the request is validated and processed but nothing is persisted. The only valid value is 'All'."),
		queryParam("fieldManager", "string", "The name of the actor making the change, recorded in managedFields. At most 128 printable characters."),
		queryParam("fieldValidation", "string", "How the server treats fields of the body that it does not know or that appear twice. "+
			"'Ignore' drops them silently; 'Warn' drops them and sends a warning header for each; "+
			"'Strict' rejects the request with an error naming each one. The default is 'Warn'."),
	}
}

func listParams() []spec.Parameter {
	return []spec.Parameter{
		queryParam("allowWatchBookmarks", "boolean", "Asks a watch for BOOKMARK events, which carry only a resourceVersion. Servers may ignore it."),
		queryParam("continue", "string", "The continue token of the previous page of a paginated list."),
		queryParam("fieldSelector", "string", "Restricts the result to objects whose fields match. Defaults to everything."),
		queryParam("labelSelector", "string", "Restricts the result to objects whose labels match. Defaults to everything."),
		queryParam("limit", "integer", "The most items to return in one page; the response's continue token fetches the next."),
		queryParam("resourceVersion", "string", "Which version of the collection to serve; see resourceVersionMatch. Unset means the most recent."),
		queryParam("resourceVersionMatch", "string", "How resourceVersion applies to a list: 'Exact' or 'NotOlderThan'."),
		queryParam("sendInitialEvents", "boolean", "With watch, asks for synthetic ADDED events for the current state before the changes."),
		queryParam("timeoutSeconds", "integer", "Limits the duration of the list or watch call, whether or not there is activity."),
		queryParam("watch", "boolean", "Watch for changes to the described resources and stream them as add, update and remove notifications."),
	}
}

func deleteParams() []spec.Parameter {
	return []spec.Parameter{
		queryParam("dryRun", "string", "When present, the request is validated and processed but nothing is persisted. The only valid value is 'All'."),
		queryParam("gracePeriodSeconds", "integer", "Seconds before the object is deleted; zero deletes immediately. Unset uses the kind's default."),
		queryParam("orphanDependents", "boolean", "Deprecated in favour of propagationPolicy: whether dependents are orphaned."),
		queryParam("propagationPolicy", "string", "Whether and how dependents are garbage collected: 'Orphan', 'Background' or 'Foreground'."),
	}
}

func logParams() []spec.Parameter {
	return []spec.Parameter{
		queryParam("container", "string", "The container whose log to return; may be omitted when the pod has one container."),
		queryParam("follow", "boolean", "Stream the log as it grows."),
		queryParam("insecureSkipTLSVerifyBackend", "boolean", "Skip verifying the serving certificate of the node agent that holds the log."),
		queryParam("limitBytes", "integer", "Stop after this many bytes of log."),
		queryParam("previous", "boolean", "Return the log of the previous, terminated instance of the container."),
		queryParam("sinceSeconds", "integer", "Only lines newer than this many seconds."),
		queryParam("tailLines", "integer", "Only this many lines from the end of the log."),
		queryParam("timestamps", "boolean", "Prefix every line with its RFC 3339 timestamp."),
	}
}

func streamParams() []spec.Parameter {
	return []spec.Parameter{
		queryParam("container", "string", "The container to connect to; may be omitted when the pod has one container."),
		queryParam("stderr", "boolean", "Connect the container's standard error."),
		queryParam("stdin", "boolean", "Connect the container's standard input."),
		queryParam("stdout", "boolean", "Connect the container's standard output."),
		queryParam("tty", "boolean", "Allocate a terminal."),
	}
}

// operation assembles one operation.
type operation struct {
	id, description, action string
	gvk                     schema.GroupVersionKind
	params                  []spec.Parameter
	consumes, produces      []string
	// responses maps status codes to the body schema (nil: no body).
	responses map[int]*spec.Schema
}

var statusText = map[int]string{200: "OK", 201: "Created", 202: "Accepted", 401: "Unauthorized"}

func (o operation) build(gv schema.GroupVersion) *spec.Operation {
	op := &spec.Operation{OperationProps: spec.OperationProps{
		ID:          o.id,
		Description: o.description,
		Consumes:    o.consumes,
		Produces:    o.produces,
		Schemes:     []string{"https"},
		Tags:        []string{tag(gv)},
		Parameters:  o.params,
		Responses: &spec.Responses{ResponsesProps: spec.ResponsesProps{
			StatusCodeResponses: map[int]spec.Response{401: {ResponseProps: spec.ResponseProps{Description: statusText[401]}}},
		}},
	}}
	for code, s := range o.responses {
		op.Responses.StatusCodeResponses[code] = spec.Response{ResponseProps: spec.ResponseProps{Description: statusText[code], Schema: s}}
	}
	op.AddExtension(extAction, o.action)
	op.AddExtension(extGVK, map[string]string{"group": o.gvk.Group, "version": o.gvk.Version, "kind": o.gvk.Kind})
	return op
}

// add builds every path of r.
func (p *paths) add(r Resource) error {
	gv := r.GVK.GroupVersion()
	objType := reflect.TypeOf(r.Object)
	obj, err := p.ref(objType)
	if err != nil {
		return err
	}
	if err := p.kindOf(objType, r.GVK); err != nil {
		return err
	}
	var list *spec.Schema
	if r.List != nil {
		listType := reflect.TypeOf(r.List)
		if list, err = p.ref(listType); err != nil {
			return err
		}
		if err := p.kindOf(listType, gv.WithKind(r.GVK.Kind+"List")); err != nil {
			return err
		}
	}
	deleteOptions, err := p.ref(deleteOptionsType)
	if err != nil {
		return err
	}
	status, err := p.ref(statusType)
	if err != nil {
		return err
	}
	watchEvent, err := p.ref(watchEventType)
	if err != nil {
		return err
	}
	patch, err := p.ref(patchType)
	if err != nil {
		return err
	}
	for _, t := range []struct {
		t    reflect.Type
		kind string
	}{{deleteOptionsType, "DeleteOptions"}, {watchEventType, "WatchEvent"}} {
		if err := p.kindOf(t.t, gv.WithKind(t.kind)); err != nil {
			return err
		}
	}
	if err := p.kindOf(statusType, schema.GroupVersionKind{Version: "v1", Kind: "Status"}); err != nil {
		return err
	}

	verbs := map[string]bool{}
	for _, v := range r.Verbs {
		verbs[v] = true
	}
	kind := r.GVK.Kind
	gvPart := opGroupVersion(gv)
	prefix := "/" + v3Key(gv)
	scope, scoped := "", kind
	var scopeParams []spec.Parameter
	if r.Namespaced {
		scope = "/namespaces/{namespace}"
		scoped = "Namespaced" + kind
		scopeParams = []spec.Parameter{pathParam("namespace", "The namespace of the object.")}
	}
	nameParam := pathParam("name", "The name of the "+kind+".")
	collectionPath := prefix + scope + "/" + r.Resource
	itemPath := collectionPath + "/{name}"
	read := map[int]*spec.Schema{200: obj}
	written := map[int]*spec.Schema{200: obj, 201: obj}
	created := map[int]*spec.Schema{200: obj, 201: obj, 202: obj}

	collection := spec.PathItem{}
	if verbs[VerbList] {
		collection.Get = operation{id: "list" + gvPart + scoped, description: "list or watch objects of kind " + kind, action: "list",
			gvk: r.GVK, params: listParams(), consumes: anyConsumes, produces: listProduces,
			responses: map[int]*spec.Schema{200: list}}.build(gv)
	}
	if verbs[VerbCreate] {
		collection.Post = operation{id: "create" + gvPart + scoped, description: "create a " + kind, action: "post",
			gvk: r.GVK, params: append([]spec.Parameter{bodyParam(obj)}, writeParams()...), consumes: anyConsumes,
			produces: objectProduces, responses: created}.build(gv)
	}
	if verbs[VerbDeleteCollection] {
		params := append([]spec.Parameter{bodyParam(deleteOptions)}, deleteParams()...)
		for _, lp := range listParams() {
			if lp.Name != "watch" && lp.Name != "allowWatchBookmarks" {
				params = append(params, lp)
			}
		}
		collection.Delete = operation{id: "delete" + gvPart + "Collection" + scoped, description: "delete collection of " + kind,
			action: "deletecollection", gvk: r.GVK, params: params, consumes: anyConsumes, produces: objectProduces,
			responses: map[int]*spec.Schema{200: status}}.build(gv)
	}
	p.put(collectionPath, collection, append(scopeParams, prettyParam()))

	if verbs[VerbList] && r.Namespaced {
		all := spec.PathItem{}
		all.Get = operation{id: "list" + gvPart + kind + "ForAllNamespaces", description: "list or watch objects of kind " + kind,
			action: "list", gvk: r.GVK, params: listParams(), consumes: anyConsumes, produces: listProduces,
			responses: map[int]*spec.Schema{200: list}}.build(gv)
		p.put(prefix+"/"+r.Resource, all, []spec.Parameter{prettyParam()})
	}

	if verbs[VerbWatch] {
		watch := func(id, action, desc string) spec.PathItem {
			return spec.PathItem{PathItemProps: spec.PathItemProps{Get: operation{id: id, description: desc, action: action,
				gvk: r.GVK, params: listParams(), consumes: anyConsumes, produces: listProduces,
				responses: map[int]*spec.Schema{200: watchEvent}}.build(gv)}}
		}
		p.put(prefix+"/watch"+scope+"/"+r.Resource,
			watch("watch"+gvPart+scoped+"List", "watchlist", "watch individual changes to a list of "+kind+". deprecated: use the 'watch' parameter with a list operation instead."),
			append(scopeParams, prettyParam()))
		p.put(prefix+"/watch"+scope+"/"+r.Resource+"/{name}",
			watch("watch"+gvPart+scoped, "watch", "watch changes to an object of kind "+kind+". deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter."),
			append([]spec.Parameter{nameParam}, append(scopeParams, prettyParam())...))
		if r.Namespaced {
			p.put(prefix+"/watch/"+r.Resource,
				watch("watch"+gvPart+kind+"ListForAllNamespaces", "watchlist", "watch individual changes to a list of "+kind+". deprecated: use the 'watch' parameter with a list operation instead."),
				[]spec.Parameter{prettyParam()})
		}
	}

	itemParams := append([]spec.Parameter{nameParam}, append(scopeParams, prettyParam())...)
	item := spec.PathItem{}
	if verbs[VerbGet] {
		item.Get = operation{id: "read" + gvPart + scoped, description: "read the specified " + kind, action: "get",
			gvk: r.GVK, consumes: anyConsumes, produces: objectProduces, responses: read}.build(gv)
	}
	if verbs[VerbUpdate] {
		item.Put = operation{id: "replace" + gvPart + scoped, description: "replace the specified " + kind, action: "put",
			gvk: r.GVK, params: append([]spec.Parameter{bodyParam(obj)}, writeParams()...), consumes: anyConsumes,
			produces: objectProduces, responses: written}.build(gv)
	}
	if verbs[VerbPatch] {
		item.Patch = p.patchOp("patch"+gvPart+scoped, "partially update the specified "+kind, r.GVK, gv, patch, written)
	}
	if verbs[VerbDelete] {
		item.Delete = operation{id: "delete" + gvPart + scoped, description: "delete a " + kind, action: "delete",
			gvk: r.GVK, params: append([]spec.Parameter{bodyParam(deleteOptions)}, deleteParams()...), consumes: anyConsumes,
			produces: objectProduces, responses: map[int]*spec.Schema{200: obj, 202: obj}}.build(gv)
	}
	p.put(itemPath, item, itemParams)

	for _, sub := range r.Subresources {
		if err := p.addSubresource(r, sub, itemPath, itemParams, scoped, gvPart, obj, patch); err != nil {
			return err
		}
	}
	return nil
}

// patchOp is a PATCH operation taking every patch type berth accepts.
func (p *paths) patchOp(id, desc string, gvk schema.GroupVersionKind, gv schema.GroupVersion, patch *spec.Schema, responses map[int]*spec.Schema) *spec.Operation {
	consumes := []string{mimeJSONPatch, mimeMergePatch, mimeStrategicPatch}
	params := append([]spec.Parameter{bodyParam(patch)}, writeParams()...)
	if p.info.ServerSideApply {
		consumes = append(consumes, mimeApplyPatch)
		params = append(params, queryParam("force", "boolean",
			"Apply requests only: take ownership of fields other managers own instead of failing with a conflict."))
	}
	return operation{id: id, description: desc, action: "patch", gvk: gvk, params: params,
		consumes: consumes, produces: objectProduces, responses: responses}.build(gv)
}

// addSubresource builds the path of one subresource of r.
func (p *paths) addSubresource(r Resource, sub, itemPath string, itemParams []spec.Parameter, scoped, gvPart string, obj, patch *spec.Schema) error {
	gv := r.GVK.GroupVersion()
	s := subresourceOps[sub]
	gvk := r.GVK
	if !s.gvk.Empty() {
		gvk = s.gvk
	}
	body := obj
	if s.object != nil {
		t := reflect.TypeOf(s.object)
		var err error
		if body, err = p.ref(t); err != nil {
			return err
		}
		if err := p.kindOf(t, gvk); err != nil {
			return err
		}
	}
	suffix := upperFirst(sub)
	if sub == SubresourcePortForward {
		suffix = "Portforward"
	}
	var params []spec.Parameter
	if s.params != nil {
		params = s.params()
	}
	item := spec.PathItem{}
	switch s.kind {
	case subresourceReadWrite:
		written := map[int]*spec.Schema{200: body, 201: body}
		item.Get = operation{id: "read" + gvPart + scoped + suffix, description: "read " + sub + " of the specified " + r.GVK.Kind,
			action: "get", gvk: gvk, consumes: anyConsumes, produces: objectProduces, responses: map[int]*spec.Schema{200: body}}.build(gv)
		item.Put = operation{id: "replace" + gvPart + scoped + suffix, description: "replace " + sub + " of the specified " + r.GVK.Kind,
			action: "put", gvk: gvk, params: append([]spec.Parameter{bodyParam(body)}, writeParams()...), consumes: anyConsumes,
			produces: objectProduces, responses: written}.build(gv)
		item.Patch = p.patchOp("patch"+gvPart+scoped+suffix, "partially update "+sub+" of the specified "+r.GVK.Kind, gvk, gv, patch, written)
	case subresourceCreate:
		item.Post = operation{id: "create" + gvPart + scoped + suffix, description: "create " + sub + " of a " + r.GVK.Kind,
			action: "post", gvk: gvk, params: append([]spec.Parameter{bodyParam(body)}, writeParams()...), consumes: anyConsumes,
			produces: objectProduces, responses: map[int]*spec.Schema{200: body, 201: body, 202: body}}.build(gv)
	case subresourceLog:
		text := &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}
		item.Get = operation{id: "read" + gvPart + scoped + suffix, description: "read log of the specified " + r.GVK.Kind,
			action: "get", gvk: gvk, params: params, consumes: anyConsumes,
			produces: []string{mimeText, mimeJSON, mimeYAML, mimeProtobuf}, responses: map[int]*spec.Schema{200: text}}.build(gv)
	case subresourceConnect:
		text := &spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}}}
		for _, method := range []string{"Get", "Post"} {
			op := operation{id: "connect" + gvPart + method + scoped + suffix,
				description: "connect " + strings.ToUpper(method) + " requests to " + sub + " of " + r.GVK.Kind,
				action:      "connect", gvk: gvk, params: params, consumes: anyConsumes, produces: []string{mimeAny},
				responses: map[int]*spec.Schema{200: text}}.build(gv)
			if method == "Get" {
				item.Get = op
			} else {
				item.Post = op
			}
		}
	}
	p.put(itemPath+"/"+sub, item, itemParams)
	return nil
}

// put stores a path with its path-level parameters, skipping paths that
// ended up with no operation.
func (p *paths) put(path string, item spec.PathItem, params []spec.Parameter) {
	if item.Get == nil && item.Put == nil && item.Post == nil && item.Patch == nil && item.Delete == nil {
		return
	}
	item.Parameters = params
	p.items[path] = item
}
