package kubelet

import (
	"context"
	"fmt"
	"net/url"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kubeletserver "plainkube.dev/plainkube/internal/kubelet/server"

	"plainkube.dev/plainkube/internal/kubelet/runtime"
)

// streams implements the agent API's Streamer: it finds a pod's running
// sandbox and containers in containerd and asks CRI for streaming URLs.
type streams struct{ a *Agent }

var _ kubeletserver.Streamer = streams{}

func (s streams) ExecURL(ctx context.Context, ns, pod, container string, cmd []string, o kubeletserver.StreamOptions) (*url.URL, error) {
	id, err := s.container(ctx, ns, pod, container)
	if err != nil {
		return nil, err
	}
	resp, err := s.a.cri.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: cmd, Tty: o.TTY, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.Url)
}

func (s streams) AttachURL(ctx context.Context, ns, pod, container string, o kubeletserver.StreamOptions) (*url.URL, error) {
	id, err := s.container(ctx, ns, pod, container)
	if err != nil {
		return nil, err
	}
	resp, err := s.a.cri.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: id, Tty: o.TTY, Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.Url)
}

func (s streams) Run(ctx context.Context, ns, pod, container string, cmd []string) ([]byte, error) {
	id, err := s.container(ctx, ns, pod, container)
	if err != nil {
		return nil, err
	}
	stdout, stderr, err := s.a.cri.ExecSync(ctx, id, cmd, runTimeout)
	if err != nil {
		return nil, err
	}
	return append(stdout, stderr...), nil
}

// runTimeout bounds a command run through the agent's /run.
const runTimeout = time.Minute

func (s streams) PortForwardURL(ctx context.Context, ns, pod string, ports []int32) (*url.URL, error) {
	sbs, err := s.a.cri.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{runtime.LabelPodNamespace: ns, runtime.LabelPodName: pod},
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	})
	if err != nil {
		return nil, err
	}
	var best *runtimeapi.PodSandbox
	for _, sb := range sbs {
		if best == nil || sb.CreatedAt > best.CreatedAt {
			best = sb
		}
	}
	if best == nil {
		return nil, fmt.Errorf("pod does not exist: %w", kubeletserver.ErrNotFound)
	}
	resp, err := s.a.cri.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: best.Id, Port: ports})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.Url)
}

// container is the ID of the newest running instance of a pod's container
// (found by the labels the agent puts on sandboxes and containers; a pod
// recreated under the same name has the newer one).
func (s streams) container(ctx context.Context, ns, pod, name string) (string, error) {
	cs, err := s.a.cri.ListContainers(ctx, &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{runtime.LabelPodNamespace: ns, runtime.LabelPodName: pod, runtime.LabelContainerName: name},
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if err != nil {
		return "", err
	}
	var best *runtimeapi.Container
	for _, c := range cs {
		if best == nil || c.CreatedAt > best.CreatedAt {
			best = c
		}
	}
	if best == nil {
		return "", fmt.Errorf("container not found (%q): %w", name, kubeletserver.ErrNotFound)
	}
	return best.Id, nil
}
