package subresources

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"

	"plainkube.dev/plainkube/internal/api/nodeutil"
	"plainkube.dev/plainkube/internal/registry"
)

// Log serves pods/log by proxying to the node agent that runs the pod (its
// /containerLogs endpoint), streaming the answer as it comes, as plain text
// or, to a WebSocket client, as WebSocket messages.
var Log = registry.Handler{Serve: servePodLog, OwnForm: true}

// podLogParams are the pods/log query parameters passed on to the node.
var podLogParams = []string{"follow", "previous", "timestamps", "tailLines", "sinceSeconds", "sinceTime", "limitBytes"}

func servePodLog(rq *registry.Request) error {
	if rq.Verb != "get" {
		return methodNotAllowed(rq)
	}
	ctx := rq.R.Context()
	obj, err := rq.API.Get(ctx, rq.Resource, rq.Namespace, rq.Name)
	if err != nil {
		return err
	}
	pod := obj.(*corev1.Pod)
	container, err := logContainer(pod, rq.R.URL.Query().Get("container"))
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return badRequest("container %q in pod %q is waiting to start: the pod is not scheduled to a node yet", container, pod.Name)
	}
	node, err := node(ctx, rq.API, pod.Spec.NodeName)
	if err != nil {
		return err
	}
	if nodeutil.IsSimulated(node) {
		return badRequest("pod %q runs on simulated node %q: simulated pods run no containers, so they have no logs", pod.Name, pod.Spec.NodeName)
	}
	addr := nodeutil.AgentAddress(node)
	client := rq.API.KubeletClient()
	if client == nil || addr == "" {
		return notImplemented(fmt.Sprintf("node %q does not serve container logs (its agent has no API endpoint)", node.Name))
	}
	q := url.Values{}
	for _, k := range podLogParams {
		if v := rq.R.URL.Query().Get(k); v != "" {
			q.Set(k, v)
		}
	}
	u := url.URL{Scheme: "https", Host: addr, Path: "/containerLogs/" + pod.Namespace + "/" + pod.Name + "/" + container, RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return registry.NewStatusError(http.StatusInternalServerError, "InternalError", fmt.Sprintf("Get %q: %v", u.String(), err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		code := resp.StatusCode
		if code == http.StatusNotFound {
			return registry.NewStatusError(code, "NotFound", strings.TrimSpace(string(msg)))
		}
		return registry.NewStatusError(code, "BadRequest", strings.TrimSpace(string(msg)))
	}
	if wsstream.IsWebSocketRequest(rq.R) {
		// As upstream: the log as WebSocket messages (binary.k8s.io, or
		// base64.binary.k8s.io for clients that read text frames), the
		// connection closed at its end.
		wsstream.NewReader(resp.Body, true, wsstream.NewDefaultReaderProtocols()).Copy(rq.W, rq.R)
		return nil
	}
	rq.W.Header().Set("Content-Type", "text/plain")
	rq.W.WriteHeader(http.StatusOK)
	flusher, _ := rq.W.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := rq.W.Write(buf[:n]); werr != nil {
				return nil
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if err != nil {
			return nil
		}
	}
}

// logContainer picks the container whose log is asked for: the named one,
// or the only one, as upstream.
func logContainer(pod *corev1.Pod, name string) (string, error) {
	if name == "" {
		if len(pod.Spec.Containers) == 1 {
			return pod.Spec.Containers[0].Name, nil
		}
		var main []string
		for _, c := range pod.Spec.Containers {
			main = append(main, c.Name)
		}
		return "", badRequest("a container name must be specified for pod %s, choose one of: %v", pod.Name, main)
	}
	return namedContainer(pod, name)
}

// containerNames lists a pod's init, regular and ephemeral containers.
func containerNames(pod *corev1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	return names
}

// namedContainer returns name if the pod has a container of any kind so
// named, else upstream's 400.
func namedContainer(pod *corev1.Pod, name string) (string, error) {
	if slices.Contains(containerNames(pod), name) {
		return name, nil
	}
	return "", badRequest("container %s is not valid for pod %s", name, pod.Name)
}
