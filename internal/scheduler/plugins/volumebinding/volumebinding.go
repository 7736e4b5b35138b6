package volumebinding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-helpers/storage/volume"

	"plainkube.dev/plainkube/internal/api/claimindex"
	"plainkube.dev/plainkube/internal/api/podutil"
	"plainkube.dev/plainkube/internal/reconcile"
	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// Name is the plugin's name.
const Name = "VolumeBinding"

// Upstream's reasons.
const (
	ErrReasonBindConflict = "node(s) didn't find available persistent volumes to bind"
	ErrReasonNodeConflict = "node(s) didn't match PersistentVolume's node affinity"
	ErrReasonPVNotExist   = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
	ErrUnboundImmediate   = "pod has unbound immediate PersistentVolumeClaims"
)

// DefaultBindTimeoutSeconds is upstream's default bindTimeoutSeconds.
const DefaultBindTimeoutSeconds = 600

// Args are the plugin's arguments (upstream's VolumeBindingArgs, as far
// as they apply).
type Args struct {
	// BindTimeoutSeconds bounds how long PreBind waits for the claims to
	// be bound.
	BindTimeoutSeconds *int64 `json:"bindTimeoutSeconds,omitempty"`
}

const stateKey = Name

// bindPollInterval is how often PreBind looks whether the claims are
// bound yet when nothing it waits on changed (upstream's interval): a
// change to a claim or volume it waits on wakes it at once; the poll
// notices what no such change shows (the pod deleted, the node changed).
const bindPollInterval = time.Second

// VolumeBinding is the plugin.
type VolumeBinding struct {
	client      kubernetes.Interface
	pvcs        corelisters.PersistentVolumeClaimLister
	pvs         corelisters.PersistentVolumeLister
	classes     storagelisters.StorageClassLister
	pods        corelisters.PodLister
	nodes       corelisters.NodeLister
	volumeIndex cache.Indexer // volumes by claim (claimindex)
	bindTimeout time.Duration

	// assumed maps a volume Reserve chose to the claim (namespace/name)
	// it will be bound to, until PreBind sees it bound or Unreserve
	// gives it up; other pods' cycles do not choose it meanwhile.
	mu      sync.Mutex
	assumed map[string]string

	// wakers wake PreBind's waits when what they wait on changes.
	wakers wakers
}

var (
	_ framework.PreFilterPlugin   = (*VolumeBinding)(nil)
	_ framework.FilterPlugin      = (*VolumeBinding)(nil)
	_ framework.ReservePlugin     = (*VolumeBinding)(nil)
	_ framework.PreBindPlugin     = (*VolumeBinding)(nil)
	_ framework.EnqueueExtensions = (*VolumeBinding)(nil)
)

// New returns the plugin. It reads claims, volumes and classes through
// the scheduler's informers; without them (a framework made for tests
// of other plugins) it is an error.
func New(args json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	var a Args
	if err := framework.DecodeArgs(args, &a); err != nil {
		return nil, err
	}
	timeout := int64(DefaultBindTimeoutSeconds)
	if a.BindTimeoutSeconds != nil {
		if *a.BindTimeoutSeconds < 0 {
			return nil, fmt.Errorf("bindTimeoutSeconds %d must not be negative", *a.BindTimeoutSeconds)
		}
		timeout = *a.BindTimeoutSeconds
	}
	pl := &VolumeBinding{client: h.ClientSet(), bindTimeout: time.Duration(timeout) * time.Second, assumed: map[string]string{}}
	if f := h.SharedInformerFactory(); f != nil {
		pl.pvcs = f.Core().V1().PersistentVolumeClaims().Lister()
		pl.pvs = f.Core().V1().PersistentVolumes().Lister()
		pl.classes = f.Storage().V1().StorageClasses().Lister()
		pl.pods = f.Core().V1().Pods().Lister()
		pl.nodes = f.Core().V1().Nodes().Lister()
		volumes := f.Core().V1().PersistentVolumes().Informer()
		if err := reconcile.AddIndexer(volumes, claimindex.Volumes, claimindex.VolumesByClaim); err != nil {
			return nil, err
		}
		pl.volumeIndex = volumes.GetIndexer()
		if err := pl.wakers.watch(f.Core().V1().PersistentVolumeClaims().Informer(), f.Core().V1().PersistentVolumes().Informer()); err != nil {
			return nil, err
		}
	}
	return pl, nil
}

// Name implements framework.Plugin.
func (*VolumeBinding) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions.
func (*VolumeBinding) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Resource: framework.ResourcePVC, ActionType: framework.Add | framework.UpdateOther},
		{Resource: framework.ResourcePV, ActionType: framework.Add | framework.UpdateOther},
		{Resource: framework.ResourceStorageClass, ActionType: framework.Add | framework.UpdateOther},
		{Resource: framework.ResourceNode, ActionType: framework.Add | framework.UpdateNodeLabel},
	}
}

// binding is a volume chosen for a claim: the volume as it will be
// written (claimRef set).
type binding struct {
	pv    *v1.PersistentVolume
	claim *v1.PersistentVolumeClaim
}

// podVolumes is what the pod needs done on one node.
type podVolumes struct {
	static    []binding
	provision []*v1.PersistentVolumeClaim
}

func (p *podVolumes) empty() bool { return p == nil || len(p.static)+len(p.provision) == 0 }

// stateData is the cycle's state: the volumes of the pod's bound claims,
// its delayed claims, the volumes each delayed claim may take, and
// Filter's choice per node. PreFilter reads everything that does not
// depend on the node once, so that Filter's work per node is the node's.
type stateData struct {
	// boundVolumes are the bound claims' volumes, in the pod's order; nil
	// for one that does not exist.
	boundVolumes []*v1.PersistentVolume
	// delayed are the claims that wait for their first consumer, smallest
	// request first, so that they take the smallest volumes (as upstream).
	delayed []*v1.PersistentVolumeClaim
	// candidates are, per class of a delayed claim, the volumes not bound
	// to another claim nor reserved for one.
	candidates map[string][]*v1.PersistentVolume
	byNode     map[string]*podVolumes
	// reserved is Reserve's choice, which PreBind carries out.
	reserved *podVolumes
}

// Clone implements framework.StateData: the state is only added to by
// Filter, for distinct nodes, so copies share it.
func (s *stateData) Clone() framework.StateData { return s }

func (pl *VolumeBinding) ready() error {
	if pl.pvcs == nil {
		return errors.New("the VolumeBinding plugin runs without informers")
	}
	return nil
}

// fullyBound is upstream's test of a claim the PV controller has bound.
func fullyBound(c *v1.PersistentVolumeClaim) bool {
	return c.Spec.VolumeName != "" && metav1.HasAnnotation(c.ObjectMeta, volume.AnnBindCompleted)
}

func claimKey(c *v1.PersistentVolumeClaim) string { return c.Namespace + "/" + c.Name }

// PreFilter implements framework.PreFilterPlugin.
func (pl *VolumeBinding) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	if len(podutil.ClaimNames(pod)) == 0 {
		state.Write(stateKey, &stateData{})
		return nil, framework.NewStatus(framework.Skip)
	}
	if err := pl.ready(); err != nil {
		return nil, framework.AsStatus(err)
	}
	s := &stateData{byNode: map[string]*podVolumes{}}
	immediate := false
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		name, ok := podutil.ClaimName(pod, v)
		if !ok {
			continue
		}
		c, err := pl.pvcs.PersistentVolumeClaims(pod.Namespace).Get(name)
		if err != nil {
			if apierrors.IsNotFound(err) && v.Ephemeral != nil {
				err = fmt.Errorf("waiting for ephemeral volume controller to create the persistentvolumeclaim %q", name)
			}
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, err.Error())
		}
		if c.Status.Phase == v1.ClaimLost {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable,
				fmt.Sprintf("persistentvolumeclaim %q bound to non-existent persistentvolume %q", c.Name, c.Spec.VolumeName))
		}
		if c.DeletionTimestamp != nil {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q is being deleted", c.Name))
		}
		if fullyBound(c) {
			pv, err := pl.pvs.Get(c.Spec.VolumeName)
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, framework.AsStatus(err)
			}
			s.boundVolumes = append(s.boundVolumes, pv)
			continue
		}
		delay, err := volume.IsDelayBindingMode(c, pl.classes)
		if err != nil {
			return nil, framework.AsStatus(err)
		}
		if delay && c.Spec.VolumeName == "" {
			s.delayed = append(s.delayed, c)
		} else {
			immediate = true
		}
	}
	if immediate {
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrUnboundImmediate)
	}
	if len(s.delayed) > 0 {
		slices.SortStableFunc(s.delayed, func(a, b *v1.PersistentVolumeClaim) int {
			qa, qb := a.Spec.Resources.Requests[v1.ResourceStorage], b.Spec.Resources.Requests[v1.ResourceStorage]
			return qa.Cmp(qb)
		})
		cands, err := pl.candidates(s.delayed)
		if err != nil {
			return nil, framework.AsStatus(err)
		}
		s.candidates = cands
	}
	state.Write(stateKey, s)
	return nil, nil
}

// candidates lists, per class of the claims, the volumes they may take:
// not bound to another claim, not reserved for another claim.
func (pl *VolumeBinding) candidates(claims []*v1.PersistentVolumeClaim) (map[string][]*v1.PersistentVolume, error) {
	all, err := pl.volumesFor(claims)
	if err != nil {
		return nil, err
	}
	out := map[string][]*v1.PersistentVolume{}
	for _, c := range claims {
		out[volume.GetPersistentVolumeClaimClass(c)] = nil
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for _, pv := range all {
		class := volume.GetPersistentVolumeClass(pv)
		if _, ok := out[class]; !ok {
			continue
		}
		mine := pv.Spec.ClaimRef == nil
		for _, c := range claims {
			mine = mine || volume.IsVolumeBoundToClaim(pv, c)
		}
		if to, ok := pl.assumed[pv.Name]; ok {
			mine = slices.ContainsFunc(claims, func(c *v1.PersistentVolumeClaim) bool { return claimKey(c) == to })
		}
		if mine {
			out[class] = append(out[class], pv)
		}
	}
	return out, nil
}

// volumesFor are the cached volumes that can serve claims: the unclaimed
// ones and those claimed for one of them (from the informer's index, not
// a walk over every volume).
func (pl *VolumeBinding) volumesFor(claims []*v1.PersistentVolumeClaim) ([]*v1.PersistentVolume, error) {
	keys := []string{claimindex.Unclaimed}
	for _, c := range claims {
		keys = append(keys, claimindex.Key(c.Namespace, c.Name))
	}
	var out []*v1.PersistentVolume
	seen := map[string]bool{}
	for _, k := range keys {
		objs, err := pl.volumeIndex.ByIndex(claimindex.Volumes, k)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if pv, ok := obj.(*v1.PersistentVolume); ok && !seen[pv.Name] {
				seen[pv.Name] = true
				out = append(out, pv)
			}
		}
	}
	return out, nil
}

// PreFilterExtensions implements framework.PreFilterPlugin.
func (*VolumeBinding) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter implements framework.FilterPlugin.
func (pl *VolumeBinding) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, err := framework.ReadAs[*stateData](state, stateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	node := ni.Node()
	vols, reasons, err := pl.findPodVolumes(s, node)
	if err != nil {
		return framework.AsStatus(err)
	}
	if len(reasons) > 0 {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, reasons...)
	}
	s.byNode[node.Name] = vols
	return nil
}

// findPodVolumes decides what the pod's claims need on node, or why node
// does not do.
func (pl *VolumeBinding) findPodVolumes(s *stateData, node *v1.Node) (*podVolumes, []string, error) {
	var reasons []string
	affinityOK, pvsFound := true, true
	for _, pv := range s.boundVolumes {
		if pv == nil {
			pvsFound = false
			break
		}
		if volume.CheckNodeAffinity(pv, node.Labels) != nil {
			affinityOK = false
			break
		}
	}
	if !affinityOK {
		reasons = append(reasons, ErrReasonNodeConflict)
	}
	out := &podVolumes{}
	if len(s.delayed) > 0 {
		chosen := map[string]*v1.PersistentVolume{}
		satisfied := true
		for _, c := range s.delayed {
			pv, err := volume.FindMatchingVolume(c, s.candidates[volume.GetPersistentVolumeClaimClass(c)], node, chosen, true, true)
			if err != nil {
				return nil, nil, err
			}
			if pv != nil {
				chosen[pv.Name] = pv
				out.static = append(out.static, binding{pv: pv, claim: c})
				continue
			}
			ok, err := pl.canProvision(c, node)
			if err != nil {
				return nil, nil, err
			}
			if !ok {
				satisfied = false
				continue
			}
			out.provision = append(out.provision, c)
		}
		if !satisfied {
			reasons = append(reasons, ErrReasonBindConflict)
		}
	}
	if !pvsFound {
		reasons = append(reasons, ErrReasonPVNotExist)
	}
	return out, reasons, nil
}

// canProvision reports whether the claim's class can provision a volume
// reachable from node: it names a provisioner and its allowedTopologies
// admit the node.
func (pl *VolumeBinding) canProvision(c *v1.PersistentVolumeClaim, node *v1.Node) (bool, error) {
	name := volume.GetPersistentVolumeClaimClass(c)
	if name == "" {
		return false, fmt.Errorf("no class for claim %q", claimKey(c))
	}
	class, err := pl.classes.Get(name)
	if err != nil {
		return false, fmt.Errorf("failed to find storage class %q", name)
	}
	if class.Provisioner == "" || class.Provisioner == volume.NotSupportedProvisioner {
		return false, nil
	}
	return topologyAllows(class, node), nil
}

// topologyAllows reports whether node matches one of the class's
// allowedTopologies (any node when there are none).
func topologyAllows(class *storagev1.StorageClass, node *v1.Node) bool {
	if len(class.AllowedTopologies) == 0 {
		return true
	}
	for _, t := range class.AllowedTopologies {
		ok := true
		for _, e := range t.MatchLabelExpressions {
			if !slices.Contains(e.Values, node.Labels[e.Key]) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// Reserve implements framework.ReservePlugin: the volumes chosen on
// nodeName are set aside for the pod's claims.
func (pl *VolumeBinding) Reserve(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodeName string) *framework.Status {
	s, err := framework.ReadAs[*stateData](state, stateKey)
	if err != nil {
		return nil // the pod has no claims
	}
	vols := s.byNode[nodeName]
	if vols.empty() {
		return nil
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for _, b := range vols.static {
		if to, ok := pl.assumed[b.pv.Name]; ok && to != claimKey(b.claim) {
			return framework.AsStatus(fmt.Errorf("persistentvolume %q is reserved for claim %q", b.pv.Name, to))
		}
	}
	for _, b := range vols.static {
		pl.assumed[b.pv.Name] = claimKey(b.claim)
	}
	s.reserved = vols
	return nil
}

// Unreserve implements framework.ReservePlugin. What PreBind already
// wrote through the API stays (as upstream: the PV controller undoes a
// binding that does not complete).
func (pl *VolumeBinding) Unreserve(_ context.Context, state *framework.CycleState, _ *v1.Pod, _ string) {
	s, err := framework.ReadAs[*stateData](state, stateKey)
	if err != nil || s.reserved == nil {
		return
	}
	pl.forget(s.reserved)
	s.reserved = nil
}

func (pl *VolumeBinding) forget(vols *podVolumes) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	for _, b := range vols.static {
		if pl.assumed[b.pv.Name] == claimKey(b.claim) {
			delete(pl.assumed, b.pv.Name)
		}
	}
}

// PreBind implements framework.PreBindPlugin: it writes the volumes'
// claimRefs and the claims' selected-node annotations, then waits until
// every claim is bound.
func (pl *VolumeBinding) PreBind(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	s, err := framework.ReadAs[*stateData](state, stateKey)
	if err != nil || s.reserved.empty() {
		return nil
	}
	if pl.client == nil {
		return framework.AsStatus(errors.New("the VolumeBinding plugin has no API client"))
	}
	written, err := pl.write(ctx, s.reserved, nodeName)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("binding volumes: %w", err))
	}
	if err := pl.waitBound(ctx, pod, nodeName, written); err != nil {
		return framework.AsStatus(fmt.Errorf("binding volumes: %w", err))
	}
	pl.forget(s.reserved)
	return nil
}

// write binds the chosen volumes to their claims and marks the claims to
// provision with the node; it returns the objects as written.
func (pl *VolumeBinding) write(ctx context.Context, vols *podVolumes, nodeName string) (*podVolumes, error) {
	out := &podVolumes{}
	for _, b := range vols.static {
		cur, err := pl.pvs.Get(b.pv.Name)
		if err != nil {
			return nil, err
		}
		if cur.Spec.ClaimRef != nil && !volume.IsVolumeBoundToClaim(cur, b.claim) {
			return nil, fmt.Errorf("persistentvolume %q was bound to another claim", cur.Name)
		}
		pv, dirty, err := volume.GetBindVolumeToClaim(cur, b.claim)
		if err != nil {
			return nil, err
		}
		if dirty {
			if pv, err = pl.client.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
				return nil, err
			}
		}
		out.static = append(out.static, binding{pv: pv, claim: b.claim})
	}
	for _, c := range vols.provision {
		cur, err := pl.pvcs.PersistentVolumeClaims(c.Namespace).Get(c.Name)
		if err != nil {
			return nil, err
		}
		if cur.Annotations[volume.AnnSelectedNode] != nodeName {
			cur = cur.DeepCopy()
			metav1.SetMetaDataAnnotation(&cur.ObjectMeta, volume.AnnSelectedNode, nodeName)
			if cur, err = pl.client.CoreV1().PersistentVolumeClaims(c.Namespace).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				return nil, err
			}
		}
		out.provision = append(out.provision, cur)
	}
	return out, nil
}

// waitBound waits, up to the bind timeout, until every claim written is
// bound, and fails early when the binding cannot complete (the pod was
// deleted, a claimRef was reset, the provisioner gave the claim back).
func (pl *VolumeBinding) waitBound(ctx context.Context, pod *v1.Pod, nodeName string, written *podVolumes) error {
	ctx, cancel := context.WithTimeout(ctx, pl.bindTimeout)
	defer cancel()
	// Registered before the first look, so that a change between a look
	// and the wait is not missed. A provisioned claim's volume is known
	// only once bound, so its claim's changes are what wake the wait.
	keys := written.keys()
	changed := pl.wakers.add(keys)
	defer pl.wakers.remove(keys, changed)
	t := time.NewTicker(bindPollInterval)
	defer t.Stop()
	for {
		done, err := pl.checkBound(pod, nodeName, written)
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out waiting for the claims of pod %s/%s to be bound: %w", pod.Namespace, pod.Name, ctx.Err())
		case <-changed:
		case <-t.C:
		}
	}
}

// checkBound is one look at the caches: all bound, not yet, or an error
// that ends the wait.
func (pl *VolumeBinding) checkBound(pod *v1.Pod, nodeName string, written *podVolumes) (bool, error) {
	if _, err := pl.pods.Pods(pod.Namespace).Get(pod.Name); apierrors.IsNotFound(err) {
		return false, fmt.Errorf("pod does not exist any more: %w", err)
	}
	node, err := pl.nodes.Get(nodeName)
	if err != nil {
		return false, fmt.Errorf("failed to get node %q: %w", nodeName, err)
	}
	for _, b := range written.static {
		pv, err := pl.pvs.Get(b.pv.Name)
		if err != nil {
			return false, fmt.Errorf("failed to check binding: %w", err)
		}
		if older(pv.ResourceVersion, b.pv.ResourceVersion) {
			return false, nil // the cache has not seen our write yet
		}
		if err := volume.CheckNodeAffinity(pv, node.Labels); err != nil {
			return false, fmt.Errorf("pv %q node affinity doesn't match node %q: %w", pv.Name, nodeName, err)
		}
		if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == "" {
			return false, fmt.Errorf("ClaimRef got reset for pv %q", pv.Name)
		}
		c, err := pl.pvcs.PersistentVolumeClaims(b.claim.Namespace).Get(b.claim.Name)
		if err != nil {
			return false, fmt.Errorf("failed to check binding: %w", err)
		}
		if !fullyBound(c) {
			return false, nil
		}
	}
	for _, w := range written.provision {
		c, err := pl.pvcs.PersistentVolumeClaims(w.Namespace).Get(w.Name)
		if err != nil {
			return false, fmt.Errorf("failed to check provisioning pvc: %w", err)
		}
		if older(c.ResourceVersion, w.ResourceVersion) {
			return false, nil
		}
		if c.Annotations[volume.AnnSelectedNode] != nodeName {
			return false, fmt.Errorf("provisioning failed for PVC %q", c.Name)
		}
		if c.Spec.VolumeName != "" {
			pv, err := pl.pvs.Get(c.Spec.VolumeName)
			if apierrors.IsNotFound(err) {
				return false, nil // not in the cache yet
			}
			if err != nil {
				return false, fmt.Errorf("failed to get pv %q from cache: %w", c.Spec.VolumeName, err)
			}
			if err := volume.CheckNodeAffinity(pv, node.Labels); err != nil {
				return false, fmt.Errorf("pv %q node affinity doesn't match node %q: %w", pv.Name, nodeName, err)
			}
		}
		if !fullyBound(c) {
			return false, nil
		}
	}
	return true, nil
}

// older reports whether resource version a is before b (both the
// store's revisions).
func older(a, b string) bool {
	x, err1 := strconv.ParseUint(a, 10, 64)
	y, err2 := strconv.ParseUint(b, 10, 64)
	return err1 == nil && err2 == nil && x < y
}
