// Package controllermanager builds and runs plainkube's controllers from one
// client config: inside `plainkube server` with the loopback config, or as
// `plainkube controller-manager --kubeconfig …` against any API server.
package controllermanager
