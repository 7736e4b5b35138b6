package openapi

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/registry"
)

// The operations of a group version are first described in a small model
// of our own (pathSpec, opSpec), then written out as Swagger 2.0 and as
// OpenAPI 3.0 by v2.go and v3.go.

// param is one parameter; in is "query" or "path".
type param struct {
	name, in, typ, desc string
}

var (
	pPretty          = param{"pretty", "query", "string", "If 'true', the output is pretty-printed (indented). Defaults to 'false' unless the client looks like a browser or a command-line HTTP tool."}
	pDryRun          = param{"dryRun", "query", "string", "When present, the request is checked and processed but nothing is persisted. The only valid value is All, which dry-runs every stage."}
	pFieldManager    = param{"fieldManager", "query", "string", "A name for the actor making the change, recorded in managedFields. At most 128 printable characters. Required for apply patches, optional otherwise."}
	pFieldValidation = param{"fieldValidation", "query", "string", "What to do with unknown or duplicate fields in the request body: Ignore drops them silently, Warn drops them and returns a warning for each (the default), Strict rejects the request with an error."}
	pForce           = param{"force", "query", "boolean", "Force an apply patch to take ownership of fields other managers own, instead of failing with a conflict. Must be unset for other patch types."}

	pAllowWatchBookmarks  = param{"allowWatchBookmarks", "query", "boolean", "Ask the server to send BOOKMARK watch events, which carry only a resourceVersion. Servers may ignore it; clients must not assume bookmarks arrive at any particular time."}
	pContinue             = param{"continue", "query", "string", "The continue token from the previous page of a paginated list. Tokens expire; an expired token yields 410 Gone and the client must start again without one."}
	pFieldSelector        = param{"fieldSelector", "query", "string", "Only return objects whose fields match this selector, such as metadata.name=foo. Defaults to everything."}
	pLabelSelector        = param{"labelSelector", "query", "string", "Only return objects whose labels match this selector. Defaults to everything."}
	pLimit                = param{"limit", "query", "integer", "The most items to return in one list response; if more exist the server sets metadata.continue. Servers may return fewer items, and the remaining count in metadata.remainingItemCount."}
	pResourceVersion      = param{"resourceVersion", "query", "string", "Constrains which resource versions a list or watch may be served from. Its meaning depends on resourceVersionMatch; see the API concepts documentation. Defaults to unset."}
	pResourceVersionMatch = param{"resourceVersionMatch", "query", "string", "How resourceVersion applies to a list: Exact or NotOlderThan. Only valid together with resourceVersion. Defaults to unset."}
	pSendInitialEvents    = param{"sendInitialEvents", "query", "boolean", "With watch=true, begin the watch with synthetic ADDED events for the current state, followed by a BOOKMARK annotated k8s.io/initial-events-end. Requires resourceVersionMatch=NotOlderThan."}
	pTimeoutSeconds       = param{"timeoutSeconds", "query", "integer", "A time limit for the list or watch call, regardless of activity."}
	pWatch                = param{"watch", "query", "boolean", "Watch for changes to the described objects and return them as a stream of add, update and remove events. Specify resourceVersion."}

	pGracePeriodSeconds = param{"gracePeriodSeconds", "query", "integer", "Seconds to wait before the object is deleted; a non-negative integer. Zero means delete immediately. Unset means the kind's default."}
	pIgnoreStoreRead    = param{"ignoreStoreReadErrorWithClusterBreakingPotential", "query", "boolean", "Delete the object even if it cannot be read from storage (it is corrupt or undecodable). Dangerous: may break the cluster. Needs the delete-ignore-read-errors permission."}
	pOrphanDependents   = param{"orphanDependents", "query", "boolean", "Deprecated: use propagationPolicy. If true, dependents are orphaned; if false, the orphan finalizer is removed."}
	pPropagationPolicy  = param{"propagationPolicy", "query", "string", "Whether and how dependents are garbage collected: Orphan, Background or Foreground."}

	pName      = param{"name", "path", "string", "name of the %s"}
	pNamespace = param{"namespace", "path", "string", "object name and auth scope, such as for teams and projects"}
	pPath      = param{"path", "path", "string", "path to the resource"}

	pContainer = param{"container", "query", "string", "The container to use; defaults to the only container if there is one."}
	pStdin     = param{"stdin", "query", "boolean", "Redirect standard input."}
	pStdout    = param{"stdout", "query", "boolean", "Redirect standard output."}
	pStderr    = param{"stderr", "query", "boolean", "Redirect standard error."}
	pTTY       = param{"tty", "query", "boolean", "Allocate a terminal."}
	pCommand   = param{"command", "query", "string", "The command to run; repeat the parameter for each argument."}
	pPorts     = param{"ports", "query", "integer", "The pod ports to forward."}
	pProxyPath = param{"path", "query", "string", "The path to pass on to the proxied target."}

	pFollow       = param{"follow", "query", "boolean", "Keep streaming the log as it grows."}
	pInsecureTLS  = param{"insecureSkipTLSVerifyBackend", "query", "boolean", "Do not verify the serving certificate of the node agent the log is read from."}
	pLimitBytes   = param{"limitBytes", "query", "integer", "Stop after this many bytes of log."}
	pPrevious     = param{"previous", "query", "boolean", "Return the log of the previous, terminated instance of the container."}
	pSinceSeconds = param{"sinceSeconds", "query", "integer", "Only return log lines newer than this many seconds."}
	pStream       = param{"stream", "query", "string", "Which stream to return: All, Stdout or Stderr. Defaults to All."}
	pTailLines    = param{"tailLines", "query", "integer", "Only return this many lines from the end of the log."}
	pTimestamps   = param{"timestamps", "query", "boolean", "Prefix every log line with an RFC 3339 timestamp."}
)

var (
	writeParams      = []param{pDryRun, pFieldManager, pFieldValidation}
	patchParams      = []param{pDryRun, pFieldManager, pFieldValidation, pForce}
	listParams       = []param{pAllowWatchBookmarks, pContinue, pFieldSelector, pLabelSelector, pLimit, pResourceVersion, pResourceVersionMatch, pSendInitialEvents, pTimeoutSeconds, pWatch}
	deleteParams     = []param{pDryRun, pGracePeriodSeconds, pIgnoreStoreRead, pOrphanDependents, pPropagationPolicy}
	deleteCollParams = []param{pContinue, pDryRun, pFieldSelector, pGracePeriodSeconds, pIgnoreStoreRead, pLabelSelector, pLimit, pOrphanDependents, pPropagationPolicy, pResourceVersion, pResourceVersionMatch, pSendInitialEvents, pTimeoutSeconds}
	logParams        = []param{pContainer, pFollow, pInsecureTLS, pLimitBytes, pPrevious, pSinceSeconds, pStream, pTailLines, pTimestamps}
	execParams       = []param{pCommand, pContainer, pStderr, pStdin, pStdout, pTTY}
	attachParams     = []param{pContainer, pStderr, pStdin, pStdout, pTTY}
)

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
	produces  []string
	responses []response
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

	var paths []pathSpec
	coll := pathSpec{path: collection, params: nsParams}
	if has("list") {
		coll.ops = append(coll.ops, opSpec{
			method: "get", id: "list" + gvc + scope + kind, action: "list", gvk: &gvk,
			desc: "list or watch objects of kind " + kind, params: listParams,
			produces: listTypes, responses: []response{{200, "OK", k.list}},
		})
	}
	if has("create") {
		coll.ops = append(coll.ops, opSpec{
			method: "post", id: "create" + gvc + scope + kind, action: "post", gvk: &gvk,
			desc: "create a " + kind, params: writeParams, body: k.kind, bodyTypes: []string{"*/*"},
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
			desc: "replace the specified " + kind, params: writeParams, body: k.kind, bodyTypes: []string{"*/*"},
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
			desc: "delete a " + kind, params: deleteParams, body: defDeleteOptions, bodyTypes: []string{"*/*"},
			produces: objTypes, responses: []response{{200, "OK", defStatus}, {202, "Accepted", defStatus}},
		})
	}
	if len(it.ops) > 0 {
		paths = append(paths, it)
	}

	if r.Namespaced && has("list") {
		paths = append(paths, pathSpec{path: prefix + "/" + r.Plural, params: []param{pPretty}, ops: []opSpec{{
			method: "get", id: "list" + gvc + kind + "ForAllNamespaces", action: "list", gvk: &gvk,
			desc: "list or watch objects of kind " + kind, params: listParams,
			produces: listTypes, responses: []response{{200, "OK", k.list}},
		}}})
	}

	for _, sub := range r.Subresources {
		paths = append(paths, subresourcePaths(sub, item, itemParams, gvc, scope, kind, gvk, k, patchTypes)...)
	}
	return paths
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
	post := func(desc string) []pathSpec {
		return []pathSpec{{path: path, params: itemParams, ops: []opSpec{{
			method: "post", id: "create" + name, action: "post", gvk: &subGVK,
			desc: desc, params: writeParams, body: def, bodyTypes: []string{"*/*"},
			produces: objTypes, responses: []response{{200, "OK", def}, {201, "Created", def}, {202, "Accepted", def}},
		}}}}
	}
	connect := func(methods []string, params []param, withPath bool) []pathSpec {
		p := pathSpec{path: path, params: itemParams}
		pp := pathSpec{path: path + "/{path}", params: append(append([]param(nil), itemParams...), pPath)}
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
				op.params = nil
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
		return post("create binding of a " + kind)
	case "eviction":
		return post("create eviction of a " + kind)
	case "token":
		return post("create token of a " + kind)
	case "finalize":
		return []pathSpec{{path: path, params: itemParams, ops: []opSpec{{
			method: "put", id: "replace" + name, action: "put", gvk: &subGVK,
			desc: "replace finalize of the specified " + kind, params: writeParams, body: def, bodyTypes: []string{"*/*"},
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
		return connect([]string{"get", "post"}, []param{pPorts}, false)
	case "proxy":
		return connect([]string{"delete", "get", "head", "options", "patch", "post", "put"}, []param{pProxyPath}, true)
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
			desc: "replace " + sub + " of the specified " + kind, params: writeParams, body: def, bodyTypes: []string{"*/*"},
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
		desc: "get available resources", produces: []string{mtJSON, mtYAML, mtProtobuf},
		responses: []response{{200, "OK", defAPIResourceList}},
	}}}
}
