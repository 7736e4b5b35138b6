// Package quota is what a ResourceQuota counts, shared by the
// ResourceQuota admission plugin (internal/admission/resourcequota), which
// charges each write against the quotas of its namespace, and the resource
// quota controller (internal/controller/resourcequota), which recounts
// status.used from the objects there are.
//
// An Evaluator knows one resource: which quota resource names it counts
// (pods, requests.cpu, services.nodeports, count/<resource>.<group>…),
// which scopes an object matches (Terminating, BestEffort, PriorityClass…),
// and an object's usage. Everything here is pure: objects in, resource
// lists out; ResourceList arithmetic is in resources.go.
package quota
