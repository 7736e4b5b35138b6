package kubelet

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"plainkube.dev/plainkube/internal/api/localpath"
	"plainkube.dev/plainkube/internal/kubelet/network"
	"plainkube.dev/plainkube/internal/kubelet/nodestatus"
	"plainkube.dev/plainkube/internal/version"
)

// LabelControlPlane marks a control-plane node.
const LabelControlPlane = "node-role.kubernetes.io/control-plane"

// host is what the node reports of the machine it runs on.
type host struct {
	cpu, memory, storage resource.Quantity
	ip, hostname         string
	info                 corev1.NodeSystemInfo
}

// readHost reads the machine: CPUs, memory, the data directory's file
// system size, an address and system information.
func readHost(o Options, runtimeVersion string) host {
	h := host{ip: o.NodeIP}
	h.cpu = *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI)
	h.memory = *resource.NewQuantity(memTotal(), resource.BinarySI)
	var fs syscall.Statfs_t
	if syscall.Statfs(o.DataDir, &fs) == nil {
		h.storage = *resource.NewQuantity(int64(fs.Blocks)*fs.Bsize, resource.BinarySI)
	}
	if h.ip == "" {
		h.ip = HostIPv4()
	}
	h.hostname, _ = os.Hostname()
	var uts syscall.Utsname
	kernel := ""
	if syscall.Uname(&uts) == nil {
		kernel = utsString(uts.Release[:])
	}
	h.info = corev1.NodeSystemInfo{
		MachineID:               readTrim("/etc/machine-id"),
		SystemUUID:              readTrim("/sys/class/dmi/id/product_uuid"),
		BootID:                  readTrim("/proc/sys/kernel/random/boot_id"),
		KernelVersion:           kernel,
		OSImage:                 osImage(),
		ContainerRuntimeVersion: runtimeVersion,
		KubeletVersion:          version.GitVersion(),
		OperatingSystem:         "linux",
		Architecture:            runtime.GOARCH,
	}
	return h
}

func utsString(b []int8) string {
	var s strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		s.WriteByte(byte(c))
	}
	return s.String()
}

func readTrim(p string) string {
	b, _ := os.ReadFile(p)
	return strings.TrimSpace(string(b))
}

func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func osImage() string {
	for _, line := range strings.Split(readTrim("/etc/os-release"), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "Linux"
}

// HostIPv4 is the address a node reports by default: the host's first
// global unicast IPv4 address, else 127.0.0.1.
func HostIPv4() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
				return n.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// node is the Node this agent registers.
func (a *Agent) node(now time.Time) *corev1.Node {
	o, h := a.opts, a.host
	labels := map[string]string{
		corev1.LabelHostname:      o.NodeName,
		corev1.LabelOSStable:      "linux",
		corev1.LabelArchStable:    runtime.GOARCH,
		"beta.kubernetes.io/os":   "linux",
		"beta.kubernetes.io/arch": runtime.GOARCH,
	}
	maps.Copy(labels, o.Labels)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              h.cpu,
		corev1.ResourceMemory:           h.memory,
		corev1.ResourceEphemeralStorage: h.storage,
		corev1.ResourcePods:             *resource.NewQuantity(110, resource.DecimalSI),
	}
	addrs := []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: h.ip}}
	if h.hostname != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: h.hostname})
	}
	var spec corev1.NodeSpec
	if o.PodCIDR != "" {
		spec.PodCIDR, spec.PodCIDRs = o.PodCIDR, []string{o.PodCIDR}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   o.NodeName,
			Labels: labels,
			Annotations: map[string]string{
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
				localpath.NodeDirAnnotation:                              a.localPathDir(),
			},
		},
		Spec: spec,
		Status: corev1.NodeStatus{
			Capacity:        capacity,
			Allocatable:     capacity.DeepCopy(),
			Conditions:      nodestatus.HealthyConditions(nil, now),
			Addresses:       addrs,
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: a.apiPort()}},
			NodeInfo:        h.info,
		},
	}
}

// localPathDir is the folder of the node's local-path volumes, published
// as its Node's plainkube.dev/local-path-dir annotation.
func (a *Agent) localPathDir() string { return filepath.Join(a.opts.DataDir, "storage") }

// Upstream's limits on the images a Node's status lists.
const (
	maxNodeImages        = 50
	maxNamesPerNodeImage = 5
)

// nodeImages are the images the runtime holds, largest first, as the
// Node's status.images lists them: digests, then tags.
func (a *Agent) nodeImages(ctx context.Context) []corev1.ContainerImage {
	imgs, err := a.rt.Images.ListImages(ctx, &runtimeapi.ImageFilter{})
	if err != nil {
		a.log.Warn("listing images", "err", err)
		return nil
	}
	out := make([]corev1.ContainerImage, 0, len(imgs))
	for _, img := range imgs {
		names := append(slices.Clone(img.RepoDigests), img.RepoTags...)
		if len(names) == 0 {
			continue
		}
		out = append(out, corev1.ContainerImage{Names: names[:min(len(names), maxNamesPerNodeImage)], SizeBytes: int64(img.Size)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].SizeBytes > out[j].SizeBytes })
	return out[:min(len(out), maxNodeImages)]
}

// register creates the Node, or updates an existing one's labels and
// status to what this agent reports, then marks a control-plane node.
func (a *Agent) register(ctx context.Context) error {
	if err := a.registerNode(ctx); err != nil {
		return err
	}
	return a.markControlPlane(ctx)
}

// markControlPlane labels a control-plane node as such (Options.ControlPlane).
func (a *Agent) markControlPlane(ctx context.Context) error {
	if !a.opts.ControlPlane {
		return nil
	}
	patch := []byte(`{"metadata":{"labels":{"` + LabelControlPlane + `":""}}}`)
	if _, err := a.controlPlaneCS.CoreV1().Nodes().Patch(ctx, a.opts.NodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("marking node %s as a control-plane node: %w", a.opts.NodeName, err)
	}
	return nil
}

func (a *Agent) registerNode(ctx context.Context) error {
	nodes := a.cs.CoreV1().Nodes()
	want := a.node(time.Now())
	want.Status.Images = a.nodeImages(ctx)
	got, err := nodes.Create(ctx, want, metav1.CreateOptions{})
	if err == nil {
		a.nodeUID = got.UID
		return a.ensureNetwork(got.Spec.PodCIDR)
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering node %s: %w", want.Name, err)
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		upd := cur.DeepCopy()
		if upd.Labels == nil {
			upd.Labels = map[string]string{}
		}
		maps.Copy(upd.Labels, want.Labels)
		if upd.Annotations == nil {
			upd.Annotations = map[string]string{}
		}
		maps.Copy(upd.Annotations, want.Annotations)
		if upd.Spec.PodCIDR == "" && len(upd.Spec.PodCIDRs) == 0 && want.Spec.PodCIDR != "" {
			upd.Spec.PodCIDR, upd.Spec.PodCIDRs = want.Spec.PodCIDR, want.Spec.PodCIDRs
		}
		if upd, err = nodes.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return err
		}
		upd.Status.Capacity, upd.Status.Allocatable = want.Status.Capacity, want.Status.Allocatable
		upd.Status.Addresses, upd.Status.NodeInfo = want.Status.Addresses, want.Status.NodeInfo
		upd.Status.DaemonEndpoints = want.Status.DaemonEndpoints
		upd.Status.Images = want.Status.Images
		upd.Status.Conditions = nodestatus.HealthyConditions(upd.Status.Conditions, time.Now())
		got, err := nodes.UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		a.nodeUID = got.UID
		return a.ensureNetwork(got.Spec.PodCIDR)
	})
}

// renewLease creates or renews the node's Lease in kube-node-lease.
func (a *Agent) renewLease(ctx context.Context) error {
	leases := a.cs.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	name := a.opts.NodeName
	dur := int32(4 * a.opts.HeartbeatInterval.Seconds())
	spec := coordinationv1.LeaseSpec{
		HolderIdentity:       &name,
		LeaseDurationSeconds: &dur,
		RenewTime:            &metav1.MicroTime{Time: time.Now()},
	}
	owner := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: a.nodeUID}}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := leases.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease, OwnerReferences: owner},
				Spec:       spec,
			}, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		cur.Spec, cur.OwnerReferences = spec, owner
		_, err = leases.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
}

// updateNodeStatus refreshes the node's conditions (a strategic merge by
// type, so conditions others own stay) and the images it holds.
func (a *Agent) updateNodeStatus(ctx context.Context) error {
	var have []corev1.NodeCondition
	if cur, err := a.cs.CoreV1().Nodes().Get(ctx, a.opts.NodeName, metav1.GetOptions{}); err == nil {
		have = cur.Status.Conditions
	}
	status := map[string]any{"conditions": nodestatus.HealthyConditions(have, time.Now())}
	if imgs := a.nodeImages(ctx); imgs != nil {
		status["images"] = imgs // no merge key: the list is replaced
	}
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	_, err = a.cs.CoreV1().Nodes().Patch(ctx, a.opts.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return a.register(ctx) // deleted: register again, as a kubelet does on restart
	}
	return err
}

// heartbeat renews the Lease every HeartbeatInterval and the node status
// every StatusInterval until ctx ends.
func (a *Agent) heartbeat(ctx context.Context) {
	t := time.NewTicker(a.opts.HeartbeatInterval)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := a.renewLease(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("renewing node lease", "node", a.opts.NodeName, "err", err)
		}
		if time.Since(last)+a.opts.HeartbeatInterval > a.opts.StatusInterval {
			if err := a.updateNodeStatus(ctx); err != nil && ctx.Err() == nil {
				a.log.Warn("updating node status", "node", a.opts.NodeName, "err", err)
			} else {
				last = time.Now()
			}
		}
	}
}

// ensureNetwork configures the pod network for the Node's pod CIDR, if it
// has one and it is not the one configured.
func (a *Agent) ensureNetwork(podCIDR string) error {
	changed, err := a.net.Ensure(podCIDR)
	if changed {
		a.log.Info("pod network configured", "podCIDR", podCIDR)
	}
	return err
}

// awaitPodCIDR waits for a Node registered without a pod CIDR to be given
// one (by the node IPAM controller), checking every second, and then
// configures the pod network. Until then only hostNetwork pods can start.
// It returns nil once configured or when ctx ends, and the error when
// another node's pods hold the range's bridge (the agent stops).
func (a *Agent) awaitPodCIDR(ctx context.Context) error {
	warned := false
	for !a.net.Configured() {
		n, err := a.cs.CoreV1().Nodes().Get(ctx, a.opts.NodeName, metav1.GetOptions{})
		if err == nil && n.Spec.PodCIDR != "" {
			if err := a.ensureNetwork(n.Spec.PodCIDR); err != nil {
				if inUse := (*network.BridgeInUseError)(nil); errors.As(err, &inUse) {
					return err
				}
				a.log.Warn("configuring the pod network", "err", err)
			}
		} else if !warned {
			a.log.Warn("the node has no pod CIDR yet: only hostNetwork pods can start until it has")
			warned = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
	return nil
}
