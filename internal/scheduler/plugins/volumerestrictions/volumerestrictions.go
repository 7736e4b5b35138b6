package volumerestrictions

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"plainkube.dev/plainkube/internal/scheduler/framework"
)

// Name is the plugin's name.
const Name = "VolumeRestrictions"

// Upstream's reasons.
const (
	ErrReasonDiskConflict             = "node(s) had no available disk"
	ErrReasonReadWriteOncePodConflict = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)

const preFilterStateKey = "PreFilter" + Name

// VolumeRestrictions is the plugin.
type VolumeRestrictions struct{ h framework.Handle }

var (
	_ framework.PreFilterPlugin     = (*VolumeRestrictions)(nil)
	_ framework.PreFilterExtensions = (*VolumeRestrictions)(nil)
	_ framework.FilterPlugin        = (*VolumeRestrictions)(nil)
	_ framework.EnqueueExtensions   = (*VolumeRestrictions)(nil)
)

// New returns the plugin; it takes no arguments.
func New(_ json.RawMessage, h framework.Handle) (framework.Plugin, error) {
	return &VolumeRestrictions{h: h}, nil
}

// Name implements framework.Plugin.
func (*VolumeRestrictions) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions.
func (*VolumeRestrictions) EventsToRegister() []framework.ClusterEvent {
	return []framework.ClusterEvent{
		{Resource: framework.ResourcePod, ActionType: framework.Delete},
		{Resource: framework.ResourcePVC, ActionType: framework.Add | framework.UpdateOther},
		{Resource: framework.ResourceNode, ActionType: framework.Add},
	}
}

type preFilterState struct {
	// rwopClaims are the pod's ReadWriteOncePod claims (namespace/name).
	rwopClaims sets.Set[string]
	// conflicts counts bound pods using one of them.
	conflicts int
}

func (s *preFilterState) Clone() framework.StateData {
	c := *s
	return &c
}

func needsDiskCheck(v *v1.Volume) bool {
	return v.GCEPersistentDisk != nil || v.AWSElasticBlockStore != nil || v.RBD != nil || v.ISCSI != nil
}

// PreFilter implements framework.PreFilterPlugin.
func (pl *VolumeRestrictions) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	needsCheck := false
	s := &preFilterState{rwopClaims: sets.New[string]()}
	snap := pl.h.Snapshot()
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if needsDiskCheck(v) {
			needsCheck = true
		}
		if v.PersistentVolumeClaim == nil || snap.PVC == nil {
			continue
		}
		key := pod.Namespace + "/" + v.PersistentVolumeClaim.ClaimName
		pvc, ok := snap.PVC(key)
		if !ok {
			return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("persistentvolumeclaim %q not found", v.PersistentVolumeClaim.ClaimName))
		}
		for _, m := range pvc.Spec.AccessModes {
			if m == v1.ReadWriteOncePod {
				s.rwopClaims.Insert(key)
				if snap.IsPVCUsedByPods(key) {
					s.conflicts++
				}
			}
		}
	}
	if !needsCheck && s.conflicts == 0 {
		return nil, framework.NewStatus(framework.Skip)
	}
	state.Write(preFilterStateKey, s)
	return nil, nil
}

// PreFilterExtensions implements framework.PreFilterPlugin.
func (pl *VolumeRestrictions) PreFilterExtensions() framework.PreFilterExtensions { return pl }

func (pl *VolumeRestrictions) update(state *framework.CycleState, pi *framework.PodInfo, delta int) *framework.Status {
	s, err := framework.ReadAs[*preFilterState](state, preFilterStateKey)
	if err != nil {
		return framework.AsStatus(err)
	}
	for _, v := range pi.Pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && s.rwopClaims.Has(pi.Pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName) {
			s.conflicts += delta
		}
	}
	return nil
}

// AddPod implements framework.PreFilterExtensions.
func (pl *VolumeRestrictions) AddPod(_ context.Context, state *framework.CycleState, _ *v1.Pod, pi *framework.PodInfo, _ *framework.NodeInfo) *framework.Status {
	return pl.update(state, pi, 1)
}

// RemovePod implements framework.PreFilterExtensions.
func (pl *VolumeRestrictions) RemovePod(_ context.Context, state *framework.CycleState, _ *v1.Pod, pi *framework.PodInfo, _ *framework.NodeInfo) *framework.Status {
	return pl.update(state, pi, -1)
}

// Filter implements framework.FilterPlugin.
func (pl *VolumeRestrictions) Filter(_ context.Context, state *framework.CycleState, pod *v1.Pod, ni *framework.NodeInfo) *framework.Status {
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !needsDiskCheck(v) {
			continue
		}
		for _, ev := range ni.Pods {
			if isVolumeConflict(v, ev.Pod) {
				return framework.NewStatus(framework.Unschedulable, ErrReasonDiskConflict)
			}
		}
	}
	if s, err := framework.ReadAs[*preFilterState](state, preFilterStateKey); err == nil && s.conflicts > 0 {
		return framework.NewStatus(framework.Unschedulable, ErrReasonReadWriteOncePodConflict)
	}
	return nil
}

func isVolumeConflict(v *v1.Volume, pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		ev := &pod.Spec.Volumes[i]
		if d, e := v.GCEPersistentDisk, ev.GCEPersistentDisk; d != nil && e != nil && d.PDName == e.PDName && !(d.ReadOnly && e.ReadOnly) {
			return true
		}
		if d, e := v.AWSElasticBlockStore, ev.AWSElasticBlockStore; d != nil && e != nil && d.VolumeID == e.VolumeID {
			return true
		}
		if d, e := v.ISCSI, ev.ISCSI; d != nil && e != nil && d.IQN == e.IQN && !(d.ReadOnly && e.ReadOnly) {
			return true
		}
		if d, e := v.RBD, ev.RBD; d != nil && e != nil && haveOverlap(d.CephMonitors, e.CephMonitors) &&
			d.RBDPool == e.RBDPool && d.RBDImage == e.RBDImage && !(d.ReadOnly && e.ReadOnly) {
			return true
		}
	}
	return false
}

func haveOverlap(a, b []string) bool {
	s := sets.New(a...)
	for _, x := range b {
		if s.Has(x) {
			return true
		}
	}
	return false
}
