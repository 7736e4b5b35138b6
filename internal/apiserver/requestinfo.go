package apiserver

import (
	"net/http"
	"strings"
)

// requestInfo is what a request's method and path say about it.
type requestInfo struct {
	// IsResource is false for non-resource paths (/healthz, /version, discovery).
	IsResource bool
	Path       string
	// Verb is get, list, watch, create, update, patch, delete or deletecollection.
	Verb        string
	APIPrefix   string // "api" or "apis"
	Group       string
	Version     string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
	// Parts after the subresource (the path given to a proxy subresource).
	Rest []string
}

// namespaceSubresources are the subresources of a namespace object itself, as
// opposed to resources inside the namespace.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// parseRequestInfo maps a request onto the REST layout:
//
//	/api/v1[/watch][/namespaces/{ns}]/{resource}[/{name}[/{subresource}[/…]]]
//	/apis/{group}/{version}[/watch][/namespaces/{ns}]/{resource}[/{name}[/{subresource}[/…]]]
func parseRequestInfo(r *http.Request) requestInfo {
	info := requestInfo{Path: r.URL.Path, Verb: strings.ToLower(r.Method)}
	parts := splitPath(r.URL.Path)
	if len(parts) < 1 || (parts[0] != "api" && parts[0] != "apis") {
		return info
	}
	info.APIPrefix = parts[0]
	parts = parts[1:]
	if info.APIPrefix == "api" {
		if len(parts) < 1 {
			return info
		}
		info.Version = parts[0]
		parts = parts[1:]
	} else {
		if len(parts) < 2 {
			if len(parts) == 1 {
				info.Group = parts[0]
			}
			return info
		}
		info.Group, info.Version = parts[0], parts[1]
		parts = parts[2:]
	}
	if len(parts) == 0 {
		return info // discovery of one group version
	}
	info.IsResource = true
	watchPrefix := false
	if parts[0] == "watch" {
		watchPrefix = true
		parts = parts[1:]
	}
	if len(parts) > 0 && parts[0] == "namespaces" && len(parts) > 1 {
		info.Namespace = parts[1]
		if len(parts) > 2 && !namespaceSubresources[parts[2]] {
			parts = parts[2:]
		}
	}
	switch len(parts) {
	default:
		info.Rest = parts[3:]
		fallthrough
	case 3:
		info.Subresource = parts[2]
		fallthrough
	case 2:
		info.Name = parts[1]
		fallthrough
	case 1:
		info.Resource = parts[0]
	case 0:
		info.IsResource = false
		return info
	}
	if info.Resource == "namespaces" {
		// A namespace is named by the segment after "namespaces"; it is not
		// itself inside a namespace.
		info.Namespace = ""
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		switch {
		case watchPrefix || (info.Name == "" && isTrue(r.URL.Query().Get("watch"))):
			info.Verb = "watch"
		case info.Name == "":
			info.Verb = "list"
		default:
			info.Verb = "get"
		}
	case http.MethodPost:
		info.Verb = "create"
	case http.MethodPut:
		info.Verb = "update"
	case http.MethodPatch:
		info.Verb = "patch"
	case http.MethodDelete:
		if info.Name == "" {
			info.Verb = "deletecollection"
		} else {
			info.Verb = "delete"
		}
	}
	// A watch of one object: /watch/…/{name} or ?watch=true&fieldSelector=metadata.name=…
	if info.Verb == "get" && isTrue(r.URL.Query().Get("watch")) {
		info.Verb = "watch"
	}
	return info
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func isTrue(s string) bool { return s == "true" || s == "1" }
