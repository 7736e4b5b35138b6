package kubelet

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"plainkube.dev/plainkube/internal/kubelet/containerd"
)

// Options configure an Agent. DataDir is required; the rest have defaults.
type Options struct {
	// NodeName is the Node's name (default: the host name, lower-cased).
	NodeName string
	// DataDir holds containerd's files (containerd/), the pause binary
	// cache (cache/) and container logs (pods/).
	DataDir string
	// ControlPlane adds the node-role.kubernetes.io/control-plane label
	// once the Node is registered. A node may not set node-role labels on
	// itself (NodeRestriction), so the label is set with
	// ControlPlaneConfig's credentials, as kubeadm's mark-control-plane
	// phase sets it with the admin's (default: the agent's own, which
	// works only for an identity that is not a node's).
	ControlPlane       bool
	ControlPlaneConfig *rest.Config
	// Labels are added to the Node's.
	Labels map[string]string
	// NodeIP is the InternalIP reported (default: the host's first
	// global unicast IPv4 address, else 127.0.0.1).
	NodeIP string
	// IssueServingCert, when set, turns on the agent's HTTPS API (container
	// logs for the API server) on APIPort: it gives the API's serving
	// certificate, from the kubelet-serving CA (which only the API server
	// trusts, see package pki). Clients must present a certificate
	// signed by ClientCA (PEM). It is called once the Node is registered
	// (a joined agent's issuer asks for a kubelet-serving CSR, which is
	// approved for the Node's own addresses; see package tlsbootstrap).
	IssueServingCert func(dnsNames []string, ips []net.IP) (certPEM, keyPEM []byte, err error)
	ClientCA         []byte
	// APIPort is the agent API's port (default 10250, upstream's).
	APIPort int
	// PodCIDR is set as the Node's pod CIDR at registration when it has
	// none. Leave it empty where the controller manager's node IPAM
	// controller allocates pod CIDRs (it never hands out one a node
	// already holds, but a range set here may already be another node's);
	// the agent then waits for spec.podCIDR to be set. Pods not on the
	// host network get their addresses from the Node's pod CIDR; until it
	// has one, their sandboxes cannot start.
	PodCIDR string
	// PodMTU is the MTU of the pods' interfaces and their bridge (0: the
	// CNI bridge plugin's default, 1500); the pod network's backend sets
	// it (see internal/network's PodMTU).
	PodMTU int
	// ManifestsDir, when set, is the folder of static pod manifests (a Pod
	// in YAML or JSON per file), which the agent runs without the API
	// server and mirrors into it (static.go). It is read every
	// SyncInterval.
	ManifestsDir string
	// Runtime is a containerd already started (tests start their own to
	// import images first); when nil, Run connects to RuntimeEndpoint, or
	// without one starts a containerd under DataDir and stops it when it
	// returns.
	Runtime *containerd.Process
	// RuntimeEndpoint (unix:///path/containerd.sock) is a containerd that
	// is already running, which the agent uses through CRI v1 and neither
	// starts nor stops. The plainkube pause image is imported into its
	// k8s.io namespace (also under the sandbox image name it reports).
	// Its configuration is its owner's: the CRI plugin enabled, CNI
	// plugins in its bin_dir, and its conf_dir the CNI configuration
	// directory the agent writes its pod network into (CNIConfDir).
	RuntimeEndpoint string
	// CNIConfDir is where the agent writes the pod network's CNI
	// configuration for a containerd at RuntimeEndpoint (default: the
	// conf_dir that containerd reports, else /etc/cni/net.d).
	CNIConfDir string
	// HeartbeatInterval is how often the Lease is renewed (default 10s);
	// StatusInterval, how often node conditions are refreshed (default 1m);
	// SyncInterval, how often every pod is compared with the runtime to
	// notice exits (default 1s).
	HeartbeatInterval, StatusInterval, SyncInterval time.Duration
	// VolumeResyncInterval is how often the configMap, secret,
	// downwardAPI and projected volumes of running pods are read again
	// from the API and rewritten if changed (default 30s; upstream's
	// updates reach pods within its sync period of a minute).
	VolumeResyncInterval time.Duration
	// Workers is how many pods are synced at once (default 4); a pod
	// being stopped holds a worker for up to its grace period.
	Workers int
	// ClusterDNS are the cluster DNS servers pods with dnsPolicy
	// ClusterFirst use; without any, such pods fall back to the node's
	// resolver configuration (dnsPolicy Default), as upstream's kubelet
	// does. ClusterDomain is the cluster's DNS domain (default
	// "cluster.local").
	ClusterDNS    []string
	ClusterDomain string
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.DataDir == "" {
		return o, errors.New("kubelet: a data directory is required")
	}
	abs, err := filepath.Abs(o.DataDir)
	if err != nil {
		return o, err
	}
	o.DataDir = abs
	if o.ManifestsDir != "" {
		if o.ManifestsDir, err = filepath.Abs(o.ManifestsDir); err != nil {
			return o, err
		}
	}
	if o.NodeName == "" {
		if o.NodeName, err = DefaultNodeName(); err != nil {
			return o, err
		}
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = 10 * time.Second
	}
	if o.StatusInterval <= 0 {
		o.StatusInterval = time.Minute
	}
	if o.SyncInterval <= 0 {
		o.SyncInterval = time.Second
	}
	if o.VolumeResyncInterval <= 0 {
		o.VolumeResyncInterval = 30 * time.Second
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.ClusterDomain == "" {
		o.ClusterDomain = "cluster.local"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o, nil
}

// DefaultNodeName is a node's name unless one is given: the host name,
// lower-cased.
func DefaultNodeName() (string, error) {
	h, err := os.Hostname()
	return strings.ToLower(h), err
}
