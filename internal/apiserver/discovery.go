package apiserver

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"sort"
	"strings"
	"sync"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"plainkube.dev/plainkube/internal/registry"
)

// discovery serves the API's self-description: the legacy documents
// (/api, /apis, /api/v1, /apis/<g>, /apis/<g>/<v>) and the aggregated v2
// documents on /api and /apis, all computed from the served resources.
type discovery struct {
	mu sync.RWMutex
	// docs maps a path to its JSON body; aggregated bodies are under
	// aggregatedKey(path).
	docs  map[string][]byte
	etags map[string]string
}

func newDiscovery(resources []registry.Resource) *discovery {
	d := &discovery{}
	d.set(resources, nil)
	return d
}

const aggregatedMediaType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// subresourceKinds gives each subresource's response kind and verbs; an
// empty group/kind means the main resource's kind.
var subresourceKinds = map[string]struct {
	group, version, kind string
	verbs                []string
}{
	"status":              {verbs: []string{"get", "patch", "update"}},
	"approval":            {verbs: []string{"get", "patch", "update"}},
	"ephemeralcontainers": {verbs: []string{"get", "patch", "update"}},
	"resize":              {verbs: []string{"get", "patch", "update"}},
	"scale":               {"autoscaling", "v1", "Scale", []string{"get", "patch", "update"}},
	"binding":             {"", "v1", "Binding", []string{"create"}},
	"eviction":            {"policy", "v1", "Eviction", []string{"create"}},
	"finalize":            {verbs: []string{"update"}},
	"token":               {"authentication.k8s.io", "v1", "TokenRequest", []string{"create"}},
	"log":                 {"", "v1", "Pod", []string{"get"}},
	"exec":                {"", "v1", "PodExecOptions", []string{"create", "get"}},
	"attach":              {"", "v1", "PodAttachOptions", []string{"create", "get"}},
	"portforward":         {"", "v1", "PodPortForwardOptions", []string{"create", "get"}},
	"proxy":               {"", "v1", "%sProxyOptions", []string{"create", "delete", "get", "patch", "update"}},
}

var allVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

func verbsOf(res *registry.Resource) []string {
	if res.Verbs != nil {
		return res.Verbs
	}
	return allVerbs
}

// servedGV is one group-version in discovery: served here (local) or
// by an aggregated server (remote).
type servedGV struct {
	group, version string
	priority       Priority
	local          []*registry.Resource
	remote         *AggregatedAPI
}

// set rebuilds every document from the resources served here and the
// aggregated group-versions; an aggregated group-version hides a local one
// of the same name (its APIService routes it elsewhere).
func (d *discovery) set(resources []registry.Resource, aggregated []AggregatedAPI) {
	byGV := map[schema.GroupVersion]*servedGV{}
	var gvs []*servedGV
	for i := range aggregated {
		a := &aggregated[i]
		k := schema.GroupVersion{Group: a.Group, Version: a.Version}
		if _, dup := byGV[k]; dup || a.Group == "" {
			continue
		}
		byGV[k] = &servedGV{group: a.Group, version: a.Version, priority: a.Priority, remote: a}
		gvs = append(gvs, byGV[k])
	}
	for i := range resources {
		r := &resources[i]
		k := r.Kind.GroupVersion()
		g, ok := byGV[k]
		if !ok {
			g = &servedGV{group: k.Group, version: k.Version, priority: priorityOf(k)}
			byGV[k] = g
			gvs = append(gvs, g)
		}
		if g.remote == nil {
			g.local = append(g.local, r)
		}
	}
	groupPriority := map[string]int32{}
	for _, g := range gvs {
		groupPriority[g.group] = max(groupPriority[g.group], g.priority.Group)
	}
	sort.SliceStable(gvs, func(i, j int) bool {
		a, b := gvs[i], gvs[j]
		if a.group != b.group {
			if pa, pb := groupPriority[a.group], groupPriority[b.group]; pa != pb {
				return pa > pb
			}
			return a.group < b.group
		}
		return versionBefore(a.version, b.version, a.priority.Version, b.priority.Version)
	})
	docs := map[string][]byte{}
	put := func(path string, v interface{}) {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		docs[path] = b
	}
	groups := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	coreAgg := &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"}}
	groupsAgg := &apidiscoveryv2.APIGroupDiscoveryList{TypeMeta: coreAgg.TypeMeta}
	groupIndex := map[string]int{}
	for _, k := range gvs {
		rs := k.local
		sort.Slice(rs, func(i, j int) bool { return rs[i].Plural < rs[j].Plural })
		gvString := k.version
		if k.group != "" {
			gvString = k.group + "/" + k.version
		}
		list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gvString, APIResources: []metav1.APIResource{}}
		aggVersion := apidiscoveryv2.APIVersionDiscovery{Version: k.version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
		for _, r := range rs {
			scope := apidiscoveryv2.ScopeCluster
			if r.Namespaced {
				scope = apidiscoveryv2.ScopeNamespace
			}
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: r.Plural, SingularName: r.Singular, Namespaced: r.Namespaced, Kind: r.Kind.Kind,
				Verbs: verbsOf(r), ShortNames: r.ShortNames, Categories: r.Categories,
				StorageVersionHash: storageVersionHash(r),
			})
			ar := apidiscoveryv2.APIResourceDiscovery{
				Resource: r.Plural, SingularResource: r.Singular, Scope: scope,
				ResponseKind: &metav1.GroupVersionKind{Group: r.Kind.Group, Version: r.Kind.Version, Kind: r.Kind.Kind},
				Verbs:        verbsOf(r), ShortNames: r.ShortNames, Categories: r.Categories,
			}
			subs := append([]string(nil), r.Subresources...)
			sort.Strings(subs)
			for _, sub := range subs {
				sk, ok := subresourceKinds[sub]
				if !ok {
					continue
				}
				kind := metav1.GroupVersionKind{Group: sk.group, Version: sk.version, Kind: sk.kind}
				if sk.kind == "" {
					kind = metav1.GroupVersionKind{Group: r.Kind.Group, Version: r.Kind.Version, Kind: r.Kind.Kind}
				} else if strings.Contains(sk.kind, "%s") {
					kind.Kind = fmt.Sprintf(sk.kind, r.Kind.Kind)
				}
				list.APIResources = append(list.APIResources, metav1.APIResource{
					Name: r.Plural + "/" + sub, Namespaced: r.Namespaced, Group: kind.Group, Version: kind.Version, Kind: kind.Kind, Verbs: sk.verbs,
				})
				ar.Subresources = append(ar.Subresources, apidiscoveryv2.APISubresourceDiscovery{Subresource: sub, ResponseKind: &kind, Verbs: sk.verbs})
			}
			aggVersion.Resources = append(aggVersion.Resources, ar)
		}
		if k.remote != nil {
			// Its own document is the aggregated server's (proxied).
			aggVersion = remoteVersionDiscovery(k.remote)
		}
		if k.group == "" {
			put("/api/"+k.version, list)
			coreAgg.Items = append(coreAgg.Items, apidiscoveryv2.APIGroupDiscovery{Versions: []apidiscoveryv2.APIVersionDiscovery{aggVersion}})
			continue
		}
		if k.remote == nil {
			put("/apis/"+gvString, list)
		}
		gvd := metav1.GroupVersionForDiscovery{GroupVersion: gvString, Version: k.version}
		if i, ok := groupIndex[k.group]; ok {
			groups.Groups[i].Versions = append(groups.Groups[i].Versions, gvd)
			groupsAgg.Items[i].Versions = append(groupsAgg.Items[i].Versions, aggVersion)
			continue
		}
		groupIndex[k.group] = len(groups.Groups)
		groups.Groups = append(groups.Groups, metav1.APIGroup{Name: k.group, Versions: []metav1.GroupVersionForDiscovery{gvd}, PreferredVersion: gvd})
		groupsAgg.Items = append(groupsAgg.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: k.group}, Versions: []apidiscoveryv2.APIVersionDiscovery{aggVersion}})
	}
	for _, g := range groups.Groups {
		put("/apis/"+g.Name, &metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}, Name: g.Name, Versions: g.Versions, PreferredVersion: g.PreferredVersion})
	}
	put("/api", &metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: ""}}})
	put("/apis", groups)
	put(aggregatedKey("/api"), coreAgg)
	put(aggregatedKey("/apis"), groupsAgg)
	etags := map[string]string{}
	for p, b := range docs {
		etags[p] = fmt.Sprintf("%X", sha256.Sum256(b))
	}
	d.mu.Lock()
	d.docs, d.etags = docs, etags
	d.mu.Unlock()
}

// remoteVersionDiscovery is an aggregated group-version's entry in the
// aggregated discovery document, from the resource list last fetched from
// its server; stale (without resources) until one was fetched.
func remoteVersionDiscovery(a *AggregatedAPI) apidiscoveryv2.APIVersionDiscovery {
	v := apidiscoveryv2.APIVersionDiscovery{Version: a.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessStale}
	if a.Resources == nil {
		return v
	}
	v.Freshness = apidiscoveryv2.DiscoveryFreshnessCurrent
	index := map[string]int{}
	for _, r := range a.Resources.APIResources {
		if parent, sub, ok := strings.Cut(r.Name, "/"); ok {
			i, found := index[parent]
			if !found {
				continue
			}
			kind := &metav1.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
			if r.Group == "" && r.Version == "" {
				kind = &metav1.GroupVersionKind{Group: a.Group, Version: a.Version, Kind: r.Kind}
			}
			v.Resources[i].Subresources = append(v.Resources[i].Subresources, apidiscoveryv2.APISubresourceDiscovery{
				Subresource: sub, ResponseKind: kind, Verbs: r.Verbs})
			continue
		}
		scope := apidiscoveryv2.ScopeCluster
		if r.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		index[r.Name] = len(v.Resources)
		v.Resources = append(v.Resources, apidiscoveryv2.APIResourceDiscovery{
			Resource: r.Name, SingularResource: r.SingularName, Scope: scope,
			ResponseKind: &metav1.GroupVersionKind{Group: a.Group, Version: a.Version, Kind: r.Kind},
			Verbs:        r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories,
		})
	}
	return v
}

func aggregatedKey(path string) string { return "aggregated:" + path }

// storageVersionHash is an opaque hash of the stored group/version/kind:
// the same for the versions of a resource stored as one (as upstream's
// autoscaling/v1 and v2 HorizontalPodAutoscalers), none for a resource
// that is not stored (reviews, componentstatuses).
func storageVersionHash(r *registry.Resource) string {
	if r.Ephemeral {
		return ""
	}
	stored := r.Kind
	if r.StoredAs != nil {
		stored = r.StoredAs.Kind
	}
	sum := sha256.Sum256([]byte(stored.GroupVersion().String() + "/" + stored.Kind))
	return fmt.Sprintf("%x", sum[:6])
}

// wantsAggregated reports whether the Accept header asks for the aggregated
// discovery document (v2 or v2beta1) and which version.
func wantsAggregated(accept string) (string, bool) {
	for _, clause := range strings.Split(accept, ",") {
		_, params, err := mime.ParseMediaType(strings.TrimSpace(clause))
		if err != nil {
			continue
		}
		if params["g"] == "apidiscovery.k8s.io" && params["as"] == "APIGroupDiscoveryList" && (params["v"] == "v2" || params["v"] == "v2beta1") {
			return params["v"], true
		}
	}
	return "", false
}

// serve answers a discovery path; it reports false for paths it does not know.
func (d *discovery) serve(w http.ResponseWriter, r *http.Request) bool {
	path := strings.TrimSuffix(r.URL.Path, "/")
	key, contentType := path, "application/json"
	version := ""
	if path == "/api" || path == "/apis" {
		if v, ok := wantsAggregated(r.Header.Get("Accept")); ok {
			key, version = aggregatedKey(path), v
			contentType = strings.Replace(aggregatedMediaType, "v=v2", "v="+v, 1)
		}
	}
	d.mu.RLock()
	body, ok := d.docs[key]
	etag := d.etags[key]
	d.mu.RUnlock()
	if !ok {
		return false
	}
	if version == "v2beta1" {
		body = []byte(strings.Replace(string(body), `"apiVersion":"apidiscovery.k8s.io/v2"`, `"apiVersion":"apidiscovery.k8s.io/v2beta1"`, 1))
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Vary", "Accept")
	w.Header().Set("ETag", `"`+etag+`"`)
	if r.Header.Get("If-None-Match") == `"`+etag+`"` {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	w.WriteHeader(http.StatusOK)
	w.Write(body)
	return true
}
