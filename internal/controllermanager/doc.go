// Package controllermanager builds and runs plainkube's controllers from one
// client config: inside `plainkube server` with the loopback config, or as
// `plainkube controller-manager --kubeconfig …` against any API server.
//
// Registry is the one table of controllers (name, kube-controller-manager's
// name, constructor, enabled by default); Options.Controllers, from the
// --controllers flag, picks from it as upstream's flag does.
package controllermanager
