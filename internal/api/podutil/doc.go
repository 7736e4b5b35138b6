// Package podutil holds the questions every component asks of a Pod's
// status — is it ready, available, active, finished — answered one way for
// all of them (as upstream's pkg/api/v1/pod). It sits below the API server
// and the components, so the controllers, the node agent and the tools
// agree on what "ready" means without importing each other.
package podutil
