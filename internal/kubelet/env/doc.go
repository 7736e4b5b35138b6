// Package env resolves a container's environment as upstream's kubelet
// does: envFrom first, then env in order (values, ConfigMap and Secret
// keys, downward-API fields and container resources), each value expanded
// with the variables before it; then the service variables; then $(VAR) in
// command and args with all of them.
//
// It is pure: the node agent (internal/kubelet) reads the ConfigMaps,
// Secrets and Services a container refers to (Refs says which) into a
// Source, and Resolve turns that into the variables the runtime sets. The
// downward-API values (PodField, ContainerResource) and the $(VAR)
// expansion (Expand) are the same for volumes (internal/kubelet/volumes),
// which use them from here.
package env
