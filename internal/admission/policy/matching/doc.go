// Package matching decides whether an admission request falls under an
// admission policy's or binding's MatchResources: resourceRules and
// excludeResourceRules (operations, groups, versions, resources with
// their subresource wildcards, scope, resourceNames), matchPolicy,
// namespaceSelector and objectSelector, as upstream's policy matcher. It
// is pure: the namespace's labels come from the caller.
package matching
