// Package server is the node agent's HTTPS API (port 10250), which only the
// API server calls: it serves /healthz and /containerLogs/{namespace}/{pod}/{container}
// from the container log files the agent keeps under <data dir>/pods. Clients
// must present a certificate signed by the cluster CA.
package server
