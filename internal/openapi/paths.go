package openapi

import (
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"

	"plainkube.dev/plainkube/internal/registry"
)

// The operations of a group version are first described in a small model
// of our own (pathSpec, opSpec), then written out as Swagger 2.0 and as
// OpenAPI 3.0 by v2.go and v3.go.

// param is one parameter; in is "query" or "path".
type param struct {
	name, in, typ, desc string
}

// Query parameters are the fields of the options kinds the verbs read
// (ListOptions, CreateOptions, PodLogOptions...), described by the
// options kinds' own documentation, as upstream lists them. The few that
// are not options fields are upstream's fixed words.
var (
	pPretty    = param{"pretty", "query", "string", "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget)."}
	pName      = param{"name", "path", "string", "name of the %s"}
	pNamespace = param{"namespace", "path", "string", "object name and auth scope, such as for teams and projects"}
	pPath      = param{"path", "path", "string", "path to the resource"}

	listParams   = optionParams(metav1.ListOptions{})
	createParams = optionParams(metav1.CreateOptions{})
	updateParams = optionParams(metav1.UpdateOptions{})
	patchParams  = optionParams(metav1.PatchOptions{})
	deleteParams = optionParams(metav1.DeleteOptions{})
	// deletecollection reads both DeleteOptions and ListOptions; where
	// both have a field, ListOptions' words are upstream's.
	deleteCollParams  = mergeParams(deleteParams, withoutParams(listParams, "watch", "allowWatchBookmarks"))
	logParams         = optionParams(corev1.PodLogOptions{})
	execParams        = optionParams(corev1.PodExecOptions{})
	attachParams      = optionParams(corev1.PodAttachOptions{})
	portForwardParams = optionParams(corev1.PodPortForwardOptions{})
	podProxyParams    = optionParams(corev1.PodProxyOptions{})
	nodeProxyParams   = optionParams(corev1.NodeProxyOptions{})
	svcProxyParams    = optionParams(corev1.ServiceProxyOptions{})
)

// optionParams lists the query parameters an options kind is read from:
// its scalar and list-of-scalar fields, by JSON name, sorted.
func optionParams(opts any) []param {
	t := reflect.TypeOf(opts)
	var docs map[string]string
	if d, ok := opts.(swaggerDoc); ok {
		docs = d.SwaggerDoc()
	}
	var out []param
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, inline, skip := jsonField(f)
		if skip || inline || name == "kind" || name == "apiVersion" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		var typ string
		switch ft.Kind() {
		case reflect.String:
			typ = "string"
		case reflect.Bool:
			typ = "boolean"
		case reflect.Int, reflect.Int32, reflect.Int64:
			typ = "integer"
		default:
			continue // structs (preconditions, sinceTime) are not query parameters
		}
		out = append(out, param{name, "query", typ, docs[name]})
	}
	sortParams(out)
	return out
}

// mergeParams is a and those of b a does not have, sorted; b's words win.
func mergeParams(a, b []param) []param {
	out := slices.Clone(b)
	for _, p := range a {
		if !slices.ContainsFunc(b, func(q param) bool { return q.name == p.name }) {
			out = append(out, p)
		}
	}
	sortParams(out)
	return out
}

func withoutParams(ps []param, names ...string) []param {
	return slices.DeleteFunc(slices.Clone(ps), func(p param) bool { return slices.Contains(names, p.name) })
}

// sortParams orders parameters by name, then path before query, as
// upstream's documents list them.
func sortParams(ps []param) {
	slices.SortStableFunc(ps, func(a, b param) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.in, b.in)
	})
}

// Media types.
const (
	mtJSON          = "application/json"
	mtYAML          = "application/yaml"
	mtProtobuf      = "application/vnd.kubernetes.protobuf"
	mtJSONWatch     = "application/json;stream=watch"
	mtProtobufWatch = "application/vnd.kubernetes.protobuf;stream=watch"
	mtJSONPatch     = "application/json-patch+json"
	mtMergePatch    = "application/merge-patch+json"
	mtStrategic     = "application/strategic-merge-patch+json"
	mtApply         = "application/apply-patch+yaml"
)

// Definitions every group version refers to.
const (
	defStatus          = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
	defDeleteOptions   = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
	defPatch           = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
	defAPIResourceList = "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList"
	defWatchEvent      = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"
	defObjectMeta      = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
	defListMeta        = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
	// defString marks a plain-string response (logs, connect).
	defString = "string"
)

// response is one status code's answer; def is a definition name,
// defString, or "" for no body.
type response struct {
	code int
	desc string
	def  string
}

// opSpec is one operation.
type opSpec struct {
	method   string // get put post patch delete options head
	id, desc string
	action   string
	gvk      *schema.GroupVersionKind
	params   []param
	// body is the request body's definition ("" for none); bodyTypes the
	// media types it is accepted as.
	body      string
	bodyTypes []string
	// consumes, for an operation with no body, is what Swagger 2.0 says it
	// consumes (*/* when empty, nothing with noConsumes).
	consumes   []string
	noConsumes bool
	produces   []string
	responses  []response
}

// pathSpec is one URL path with its operations and path-level parameters.
type pathSpec struct {
	path   string
	params []param
	ops    []opSpec
}

// resolvedKinds says how a resource's kinds are named in definitions.
type resolvedKinds struct {
	kind, list string // definition names of the kind and its list
	// sub maps a subresource's request/response kind to its definition
	// name and GVK, when it differs from the main kind (scale → Scale).
	sub map[string]subKind
	// builtin is false for custom resources (no strategic merge patch).
	builtin bool
}

type subKind struct {
	def string
	gvk schema.GroupVersionKind
}

// Subresources whose kind is not the resource's own kind.
var subresourceKinds = map[string]schema.GroupVersionKind{
	"scale":       {Group: "autoscaling", Version: "v1", Kind: "Scale"},
	"binding":     {Group: "", Version: "v1", Kind: "Binding"},
	"eviction":    {Group: "policy", Version: "v1", Kind: "Eviction"},
	"token":       {Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest"},
	"exec":        {Group: "", Version: "v1", Kind: "PodExecOptions"},
	"attach":      {Group: "", Version: "v1", Kind: "PodAttachOptions"},
	"portforward": {Group: "", Version: "v1", Kind: "PodPortForwardOptions"},
	"proxy":       {Group: "", Version: "v1", Kind: "%sProxyOptions"},
}

var allVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// resourcePaths describes every path of one resource.
func resourcePaths(r registry.Resource, k resolvedKinds) []pathSpec {
	gv := r.Kind.GroupVersion()
	kind := r.Kind.Kind
	gvk := r.Kind
	verbs := r.Verbs
	if verbs == nil {
		verbs = allVerbs
	}
	has := func(v string) bool {
		if v == "list" && k.list == "" {
			return false
		}
		return slices.Contains(verbs, v)
	}
	gvc := groupCamel(gv.Group) + upperFirst(gv.Version)
	prefix := "/apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		prefix = "/api/" + gv.Version
	}
	scope := ""
	nsParams := []param{pPretty}
	collection := prefix + "/" + r.Plural
	if r.Namespaced {
		scope = "Namespaced"
		collection = prefix + "/namespaces/{namespace}/" + r.Plural
		nsParams = []param{pNamespace, pPretty}
	}
	nameParam := pName
	nameParam.desc = strings.Replace(nameParam.desc, "%s", kind, 1)
	itemParams := append([]param{nameParam}, nsParams...)
	item := collection + "/{name}"
	objTypes := []string{mtJSON, mtYAML, mtProtobuf}
	listTypes := []string{mtJSON, mtYAML, mtProtobuf, mtJSONWatch, mtProtobufWatch}
	patchTypes := []string{mtJSONPatch, mtMergePatch, mtStrategic, mtApply}
	if !k.builtin {
		patchTypes = []string{mtJSONPatch, mtMergePatch, mtApply}
	}

	// What a delete answers: a Status, or the object for stores that
	// return it.
	deleted := defStatus
	if r.ReturnDeletedObject {
		deleted = k.kind
	}
	listDesc := "list objects of kind "

	if has("watch") {
		listDesc = "list or watch objects of kind "
	}

	var paths []pathSpec
	coll := pathSpec{path: collection, params: nsParams}
	if has("list") {
		coll.ops = append(coll.ops, opSpec{
			method: "get", id: "list" + gvc + scope + kind, action: "list", gvk: &gvk,
			desc: listDesc + kind, params: listParams,
			produces: listTypes, responses: []response{{200, "OK", k.list}},
		})
	}
	if has("create") {
		coll.ops = append(coll.ops, opSpec{
			method: "post", id: "create" + gvc + scope + kind, action: "post", gvk: &gvk,
			desc: "create " + article(kind) + kind, params: createParams, body: k.kind, bodyTypes: []string{"*/*"},
			produces: objTypes, responses: []response{{200, "OK", k.kind}, {201, "Created", k.kind}, {202, "Accepted", k.kind}},
		})
	}
	if has("deletecollection") {
		coll.ops = append(coll.ops, opSpec{
			method: "delete", id: "delete" + gvc + "Collection" + scope + kind, action: "deletecollection", gvk: &gvk,
			desc: "delete collection of " + kind, params: deleteCollParams, body: defDeleteOptions, bodyTypes: []string{"*/*"},
			produces: objTypes, responses: []response{{200, "OK", defStatus}},
		})
	}
	if len(coll.ops) > 0 {
		paths = append(paths, coll)
	}

	it := pathSpec{path: item, params: itemParams}
	if has("get") {
		it.ops = append(it.ops, opSpec{
			method: "get", id: "read" + gvc + scope + kind, action: "get", gvk: &gvk,
			desc: "read the specified " + kind, produces: objTypes, responses: []response{{200, "OK", k.kind}},
		})
	}
	if has("update") {
		it.ops = append(it.ops, opSpec{
			method: "put", id: "replace" + gvc + scope + kind, action: "put", gvk: &gvk,
			desc: "replace the specified " + kind, params: updateParams, body: k.kind, bodyTypes: []string{"*/*"},
			produces: objTypes, responses: []response{{200, "OK", k.kind}, {201, "Created", k.kind}},
		})
	}
	if has("patch") {
		it.ops = append(it.ops, opSpec{
			method: "patch", id: "patch" + gvc + scope + kind, action: "patch", gvk: &gvk,
			desc: "partially update the specified " + kind, params: patchParams, body: defPatch, bodyTypes: patchTypes,
			produces: objTypes, responses: []response{{200, "OK", k.kind}, {201, "Created", k.kind}},
		})
	}
	if has("delete") {
		it.ops = append(it.ops, opSpec{
			method: "delete", id: "delete" + gvc + scope + kind, action: "delete", gvk: &gvk,
			desc: "delete " + article(kind) + kind, params: deleteParams, body: defDeleteOptions, bodyTypes: []string{"*/*"},
			produces: objTypes, responses: []response{{200, "OK", deleted}, {202, "Accepted", deleted}},
		})
	}
	if len(it.ops) > 0 {
		paths = append(paths, it)
	}

	if r.Namespaced && has("list") {
		paths = append(paths, pathSpec{path: prefix + "/" + r.Plural, params: []param{pPretty}, ops: []opSpec{{
			method: "get", id: "list" + gvc + kind + "ForAllNamespaces", action: "list", gvk: &gvk,
			desc: listDesc + kind, params: listParams,
			produces: listTypes, responses: []response{{200, "OK", k.list}},
		}}})
	}

	if has("watch") && has("list") {
		// The deprecated /watch/ paths, which the server still serves.
		watchPrefix := prefix + "/watch"
		watchColl := watchPrefix + "/" + r.Plural
		if r.Namespaced {
			watchColl = watchPrefix + "/namespaces/{namespace}/" + r.Plural
		}
		watchTypes := listTypes
		watchOp := func(id, action, desc string) []opSpec {
			return []opSpec{{method: "get", id: id, action: action, gvk: &gvk, desc: desc, params: listParams,
				produces: watchTypes, responses: []response{{200, "OK", defWatchEvent}}}}
		}
		listWatch := "watch individual changes to a list of " + kind + ". deprecated: use the 'watch' parameter with a list operation instead."
		paths = append(paths,
			pathSpec{path: watchColl, params: nsParams, ops: watchOp("watch"+gvc+scope+kind+"List", "watchlist", listWatch)},
			pathSpec{path: watchColl + "/{name}", params: itemParams, ops: watchOp("watch"+gvc+scope+kind, "watch",
				"watch changes to an object of kind "+kind+". deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter.")})
		if r.Namespaced {
			paths = append(paths, pathSpec{path: watchPrefix + "/" + r.Plural, params: []param{pPretty},
				ops: watchOp("watch"+gvc+kind+"ListForAllNamespaces", "watchlist", listWatch)})
		}
	}

	for _, sub := range r.Subresources {
		paths = append(paths, subresourcePaths(sub, item, itemParams, gvc, scope, kind, gvk, k, patchTypes)...)
	}
	for i := range paths {
		hoistParams(&paths[i])
	}
	return paths
}

// hoistParams puts the parameters every operation of a path takes (its
// path-level ones and any the operations share) on the path, and leaves
// each operation the rest, as upstream's documents list them.
func hoistParams(p *pathSpec) {
	if len(p.ops) == 0 {
		sortParams(p.params)
		return
	}
	full := make([][]param, len(p.ops))
	for i, op := range p.ops {
		full[i] = append(slices.Clone(p.params), op.params...)
	}
	var common []param
	for _, c := range full[0] {
		if !slices.Contains(common, c) && !slices.ContainsFunc(full[1:], func(f []param) bool { return !slices.Contains(f, c) }) {
			common = append(common, c)
		}
	}
	sortParams(common)
	p.params = common
	for i := range p.ops {
		own := slices.DeleteFunc(full[i], func(q param) bool { return slices.Contains(common, q) })
		sortParams(own)
		p.ops[i].params = own
	}
}

// article is the article upstream puts before a kind in operation
// descriptions: "an Event", "a Pod", none before a plural-looking kind
// ("Endpoints").
func article(kind string) string {
	if strings.HasSuffix(kind, "s") && !strings.HasSuffix(kind, "ss") {
		return ""
	}
	if kind != "" && strings.ContainsRune("AEIOUaeiou", rune(kind[0])) {
		return "an "
	}
	return "a "
}

// subresourcePaths describes the paths of one subresource of item.
func subresourcePaths(sub, item string, itemParams []param, gvc, scope, kind string, gvk schema.GroupVersionKind, k resolvedKinds, patchTypes []string) []pathSpec {
	objTypes := []string{mtJSON, mtYAML, mtProtobuf}
	// name is the operation ID without its verb: CoreV1NamespacedPodStatus.
	name := gvc + scope + kind + upperFirst(sub)
	path := item + "/" + sub
	def, subGVK := k.kind, gvk
	if sk, ok := k.sub[sub]; ok {
		def, subGVK = sk.def, sk.gvk
	}
	// A subresource's name parameter names its own kind (the Scale, the
	// PodExecOptions).
	itemParams = slices.Clone(itemParams)
	for i, p := range itemParams {
		if p.name == "name" && p.in == "path" {
			itemParams[i].desc = strings.Replace(pName.desc, "%s", subGVK.Kind, 1)
		}
	}
	post := func(desc string) []pathSpec {
		return []pathSpec{{path: path, params: itemParams, ops: []opSpec{{
			method: "post", id: "create" + name, action: "post", gvk: &subGVK,
			desc: desc, params: createParams, body: def, bodyTypes: []string{"*/*"},
			produces: objTypes, responses: []response{{200, "OK", def}, {201, "Created", def}, {202, "Accepted", def}},
		}}}}
	}
	connect := func(methods []string, params []param, withPath bool) []pathSpec {
		// Connections take no pretty.
		base := slices.DeleteFunc(slices.Clone(itemParams), func(p param) bool { return p == pPretty })
		p := pathSpec{path: path, params: base}
		pp := pathSpec{path: path + "/{path}", params: append(slices.Clone(base), pPath)}
		for _, m := range methods {
			op := opSpec{
				method: m, action: "connect", gvk: &subGVK, params: params,
				produces: []string{"*/*"}, responses: []response{{200, "OK", defString}},
			}
			op.id = "connect" + gvc + upperFirst(m) + scope + kind + upperFirst(sub)
			op.desc = "connect " + strings.ToUpper(m) + " requests to " + sub + " of " + kind
			p.ops = append(p.ops, op)
			if withPath {
				op.id += "WithPath"
				pp.ops = append(pp.ops, op)
			}
		}
		if withPath {
			return []pathSpec{p, pp}
		}
		return []pathSpec{p}
	}
	switch sub {
	case "binding":
		return post("create binding of " + article(kind) + kind)
	case "eviction":
		return post("create eviction of " + article(kind) + kind)
	case "token":
		return post("create token of " + article(kind) + kind)
	case "finalize":
		return []pathSpec{{path: path, params: itemParams, ops: []opSpec{{
			method: "put", id: "replace" + name, action: "put", gvk: &subGVK,
			desc: "replace finalize of the specified " + kind, params: updateParams, body: def, bodyTypes: []string{"*/*"},
			produces: objTypes, responses: []response{{200, "OK", def}, {201, "Created", def}},
		}}}}
	case "log":
		return []pathSpec{{path: path, params: itemParams, ops: []opSpec{{
			method: "get", id: "read" + name, action: "get", gvk: &subGVK,
			desc: "read log of the specified " + kind, params: logParams,
			produces: []string{"text/plain", mtJSON, mtYAML, mtProtobuf}, responses: []response{{200, "OK", defString}},
		}}}}
	case "exec":
		return connect([]string{"get", "post"}, execParams, false)
	case "attach":
		return connect([]string{"get", "post"}, attachParams, false)
	case "portforward":
		return connect([]string{"get", "post"}, portForwardParams, false)
	case "proxy":
		params := podProxyParams
		switch kind {
		case "Node":
			params = nodeProxyParams
		case "Service":
			params = svcProxyParams
		}
		return connect([]string{"delete", "get", "head", "options", "patch", "post", "put"}, params, true)
	}
	// status, scale, ephemeralcontainers, resize, approval, and any other
	// subresource that reads and writes a whole object.
	return []pathSpec{{path: path, params: itemParams, ops: []opSpec{
		{
			method: "get", id: "read" + name, action: "get", gvk: &subGVK,
			desc: "read " + sub + " of the specified " + kind, produces: objTypes, responses: []response{{200, "OK", def}},
		},
		{
			method: "put", id: "replace" + name, action: "put", gvk: &subGVK,
			desc: "replace " + sub + " of the specified " + kind, params: updateParams, body: def, bodyTypes: []string{"*/*"},
			produces: objTypes, responses: []response{{200, "OK", def}, {201, "Created", def}},
		},
		{
			method: "patch", id: "patch" + name, action: "patch", gvk: &subGVK,
			desc: "partially update " + sub + " of the specified " + kind, params: patchParams, body: defPatch, bodyTypes: patchTypes,
			produces: objTypes, responses: []response{{200, "OK", def}, {201, "Created", def}},
		},
	}}}
}

// apiResourcesPath is the group version's own path (/api/v1/), which
// lists its resources.
func apiResourcesPath(gv schema.GroupVersion) pathSpec {
	prefix := "/apis/" + gv.Group + "/" + gv.Version + "/"
	if gv.Group == "" {
		prefix = "/api/" + gv.Version + "/"
	}
	return pathSpec{path: prefix, ops: []opSpec{{
		method: "get", id: "get" + groupCamel(gv.Group) + upperFirst(gv.Version) + "APIResources",
		desc: "get available resources", produces: []string{mtJSON, mtYAML, mtProtobuf}, consumes: []string{mtJSON, mtYAML, mtProtobuf},
		responses: []response{{200, "OK", defAPIResourceList}},
	}}}
}

// discoveryPaths are the paths above the group versions that upstream's
// Swagger 2.0 document lists (each with the tag it gives it): the legacy
// and named group lists, each group, /version/, and the service-account
// issuer's discovery documents. Their definitions are defined in g.
func discoveryPaths(g *generator, gvs []schema.GroupVersion) (paths []pathSpec, tags []string) {
	versions := g.define(reflect.TypeFor[metav1.APIVersions]())
	groupList := g.define(reflect.TypeFor[metav1.APIGroupList]())
	group := g.define(reflect.TypeFor[metav1.APIGroup]())
	info := g.define(reflect.TypeFor[version.Info]())
	discovery := []string{mtJSON, mtYAML, mtProtobuf}
	get := func(path, id, desc, def string, types []string) pathSpec {
		return pathSpec{path: path, ops: []opSpec{{method: "get", id: id, desc: desc, produces: types, consumes: types,
			responses: []response{{200, "OK", def}}}}}
	}
	add := func(p pathSpec, tag string) {
		paths, tags = append(paths, p), append(tags, tag)
	}
	add(get("/api/", "getCoreAPIVersions", "get available API versions", versions, discovery), "core")
	add(get("/apis/", "getAPIVersions", "get available API versions", groupList, discovery), "apis")
	seen := map[string]bool{}
	for _, gv := range gvs {
		if gv.Group == "" || seen[gv.Group] {
			continue
		}
		seen[gv.Group] = true
		add(get("/apis/"+gv.Group+"/", "get"+groupCamel(gv.Group)+"APIGroup", "get information of a group", group, discovery),
			lowerFirst(groupCamel(gv.Group)))
	}
	add(get("/version/", "getCodeVersion", "get the version information for this server", info, []string{mtJSON}), "version")
	wellKnown := get("/.well-known/openid-configuration/", "getServiceAccountIssuerOpenIDConfiguration",
		"get service account issuer OpenID configuration, also known as the 'OIDC discovery doc'", defString, []string{mtJSON})
	wellKnown.ops[0].consumes, wellKnown.ops[0].noConsumes = nil, true
	add(wellKnown, "WellKnown")
	jwks := get("/openid/v1/jwks/", "getServiceAccountIssuerOpenIDKeyset",
		"get service account issuer OpenID JSON Web Key Set (contains public token verification keys)", defString, []string{"application/jwk-set+json"})
	jwks.ops[0].consumes, jwks.ops[0].noConsumes = nil, true
	add(jwks, "openid")
	return paths, tags
}
