package apiserver

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// simulatedLabel marks nodes run by plainkube's node simulator.
const simulatedLabel = "plainkube.dev/simulated"

// podLogParams are the pods/log query parameters passed on to the node.
var podLogParams = []string{"follow", "previous", "timestamps", "tailLines", "sinceSeconds", "sinceTime", "limitBytes"}

// servePodLog serves pods/log by proxying to the node agent that runs the
// pod (its /containerLogs endpoint), streaming the answer as it comes.
func (s *Server) servePodLog(rq *request) error {
	if rq.info.Verb != "get" {
		return methodNotAllowed(rq.r.Method, rq.rs.gr)
	}
	ctx := rq.r.Context()
	obj, _, err := rq.rs.get(ctx, rq.info.Namespace, rq.info.Name)
	if err != nil {
		return err
	}
	pod := obj.(*corev1.Pod)
	container, err := logContainer(pod, rq.r.URL.Query().Get("container"))
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return badRequest("container %q in pod %q is waiting to start: the pod is not scheduled to a node yet", container, pod.Name)
	}
	node, err := s.node(ctx, pod.Spec.NodeName)
	if err != nil {
		return err
	}
	if node.Labels[simulatedLabel] == "true" {
		return badRequest("pod %q runs on simulated node %q: simulated pods run no containers, so they have no logs", pod.Name, pod.Spec.NodeName)
	}
	addr := nodeAddress(node)
	if s.cfg.KubeletClient == nil || addr == "" {
		return notImplemented(fmt.Sprintf("node %q does not serve container logs (its agent has no API endpoint)", node.Name))
	}
	q := url.Values{}
	for _, k := range podLogParams {
		if v := rq.r.URL.Query().Get(k); v != "" {
			q.Set(k, v)
		}
	}
	u := url.URL{Scheme: "https", Host: addr, Path: "/containerLogs/" + pod.Namespace + "/" + pod.Name + "/" + container, RawQuery: q.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := s.cfg.KubeletClient.Do(req)
	if err != nil {
		return newStatusError(http.StatusInternalServerError, "InternalError", fmt.Sprintf("Get %q: %v", u.String(), err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		code := resp.StatusCode
		if code == http.StatusNotFound {
			return newStatusError(code, "NotFound", strings.TrimSpace(string(msg)))
		}
		return newStatusError(code, "BadRequest", strings.TrimSpace(string(msg)))
	}
	rq.w.Header().Set("Content-Type", "text/plain")
	rq.w.WriteHeader(http.StatusOK)
	flusher, _ := rq.w.(http.Flusher)
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := rq.w.Write(buf[:n]); werr != nil {
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

func (s *Server) node(ctx context.Context, name string) (*corev1.Node, error) {
	nodes := s.stores[schema.GroupVersionResource{Version: "v1", Resource: "nodes"}]
	obj, _, err := nodes.get(ctx, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Node), nil
}

// nodeAddress is host:port of a node's agent API: its InternalIP (else its
// first address) and the kubelet endpoint port it reports.
func nodeAddress(n *corev1.Node) string {
	port := n.Status.DaemonEndpoints.KubeletEndpoint.Port
	if port == 0 {
		return ""
	}
	host := ""
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			host = a.Address
			break
		}
	}
	if host == "" && len(n.Status.Addresses) > 0 {
		host = n.Status.Addresses[0].Address
	}
	if host == "" {
		return ""
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}
