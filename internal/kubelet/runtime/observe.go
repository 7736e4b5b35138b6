package runtime

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Sandbox is one pod sandbox as the runtime shows it.
type Sandbox struct {
	ID      string
	Attempt uint32
	Ready   bool
	IP      string
}

// Container is one container (one attempt of a spec container) as the
// runtime shows it.
type Container struct {
	ID         string
	Name       string
	Attempt    uint32
	State      State
	ExitCode   int32
	Reason     string
	Message    string
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	ImageRef   string
}

// State is a container's state.
type State int

const (
	Created State = iota
	Running
	Exited
	Unknown
)

// Pod is what the runtime shows of one pod.
type Pod struct {
	// Sandbox is the newest sandbox; Others are older ones, to remove.
	Sandbox *Sandbox
	Others  []string
	// Containers holds the runs of each spec container, newest first.
	Containers map[string][]Container
	// MissingImages are the spec images the runtime does not have.
	MissingImages map[string]bool
}

// Runtime is the node's container runtime as the agent uses it: the CRI
// runtime service (embedded: sandboxes, containers, exec) and image
// service, and what the agent keeps of exited containers' termination
// messages. It is safe for concurrent use.
type Runtime struct {
	internalapi.RuntimeService
	images   internalapi.ImageManagerService
	log      *slog.Logger
	messages termMessages
}

// New makes the agent's runtime over the CRI services of a containerd.
func New(rs internalapi.RuntimeService, is internalapi.ImageManagerService, log *slog.Logger) *Runtime {
	return &Runtime{RuntimeService: rs, images: is, log: log}
}

// Observe reads what the runtime has of pod.
func (r *Runtime) Observe(ctx context.Context, pod *corev1.Pod) (Pod, error) {
	rt := r.RuntimeService
	obs := Pod{Containers: map[string][]Container{}, MissingImages: map[string]bool{}}
	sel := map[string]string{labelPodUID: string(pod.UID)}
	sbs, err := rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return obs, err
	}
	sort.Slice(sbs, func(i, j int) bool {
		if sbs[i].Metadata.Attempt != sbs[j].Metadata.Attempt {
			return sbs[i].Metadata.Attempt > sbs[j].Metadata.Attempt
		}
		return sbs[i].CreatedAt > sbs[j].CreatedAt
	})
	for i, sb := range sbs {
		if i > 0 {
			obs.Others = append(obs.Others, sb.Id)
			continue
		}
		s := &Sandbox{ID: sb.Id, Attempt: sb.Metadata.Attempt, Ready: sb.State == runtimeapi.PodSandboxState_SANDBOX_READY}
		if s.Ready && !pod.Spec.HostNetwork {
			if st, err := rt.PodSandboxStatus(ctx, sb.Id, false); err == nil && st.Status.GetNetwork() != nil {
				s.IP = st.Status.Network.Ip
			}
		}
		obs.Sandbox = s
	}
	if obs.Sandbox != nil {
		cs, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{PodSandboxId: obs.Sandbox.ID, LabelSelector: sel})
		if err != nil {
			return obs, err
		}
		for _, c := range cs {
			st, err := rt.ContainerStatus(ctx, c.Id, false)
			if err != nil || st.Status == nil {
				continue // removed meanwhile
			}
			s := st.Status
			run := Container{
				ID: c.Id, Name: c.Metadata.Name, Attempt: c.Metadata.Attempt,
				ExitCode: s.ExitCode, Reason: s.Reason, Message: s.Message,
				CreatedAt: unixNano(s.CreatedAt), StartedAt: unixNano(s.StartedAt), FinishedAt: unixNano(s.FinishedAt),
				ImageRef: s.ImageRef,
			}
			if s.ImageId != "" {
				// Newer runtimes say the image's ID apart from the
				// reference; upstream reports it when there.
				run.ImageRef = s.ImageId
			}
			switch s.State {
			case runtimeapi.ContainerState_CONTAINER_CREATED:
				run.State = Created
			case runtimeapi.ContainerState_CONTAINER_RUNNING:
				run.State = Running
			case runtimeapi.ContainerState_CONTAINER_EXITED:
				run.State = Exited
				run.Message = r.exitMessage(pod.UID, s)
			default:
				run.State = Unknown
			}
			obs.Containers[run.Name] = append(obs.Containers[run.Name], run)
		}
		for _, runs := range obs.Containers {
			sort.Slice(runs, func(i, j int) bool { return runs[i].Attempt > runs[j].Attempt })
		}
	}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		st, err := r.images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: c.Image}, false)
		if err != nil {
			return obs, err
		}
		if st.Image == nil {
			obs.MissingImages[c.Image] = true
		}
	}
	return obs, nil
}

// exitMessage is the message of an exited container's status: the
// runtime's, followed by the termination message the container left.
func (r *Runtime) exitMessage(uid types.UID, st *runtimeapi.ContainerStatus) string {
	msg, ok := r.messages.get(uid, st.Id)
	if !ok {
		msg = terminationMessage(st)
		r.messages.put(uid, st.Id, msg)
	}
	switch {
	case msg == "":
		return st.Message
	case st.Message == "":
		return msg
	}
	return st.Message + ": " + msg
}

// Forget drops what the runtime keeps of the pods not in live.
func (r *Runtime) Forget(live map[types.UID]bool) { r.messages.forget(live) }

// ImageUser is the user image runs as; present is false when the runtime
// does not have the image.
func (r *Runtime) ImageUser(ctx context.Context, image string) (user ImageUser, present bool, err error) {
	img, err := r.images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: image}, false)
	if err != nil || img.Image == nil {
		return user, false, err
	}
	user.Name = img.Image.Username
	if img.Image.Uid != nil {
		user.UID = &img.Image.Uid.Value
	}
	return user, true, nil
}

// RemoveOrphans stops and removes the sandboxes of pods not in live (no
// longer bound to this node: deleted without a graceful stop, or rebound
// elsewhere), once a minute old: a pod that came after the caller's list
// of live pods may be starting its sandbox. An error means it could not
// list them.
func (r *Runtime) RemoveOrphans(ctx context.Context, live map[types.UID]bool) error {
	sbs, err := r.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{})
	if err != nil {
		return err
	}
	for _, sb := range sbs {
		uid := sb.Labels[labelPodUID]
		if uid == "" || live[types.UID(uid)] || time.Since(unixNano(sb.CreatedAt)) < time.Minute {
			continue
		}
		r.log.Info("removing sandbox of a pod that is gone", "sandbox", ShortID(sb.Id), "pod", sb.Metadata.Namespace+"/"+sb.Metadata.Name)
		if err := r.StopPodSandbox(ctx, sb.Id); err == nil {
			_ = r.RemovePodSandbox(ctx, sb.Id)
		}
	}
	return nil
}

func unixNano(n int64) time.Time {
	if n <= 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// ShortID is a container or sandbox ID as logs show it: its first 12
// characters.
func ShortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
