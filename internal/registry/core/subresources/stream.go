package subresources

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/proxy"
	apiproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/streaming/pkg/httpstream/wsstream"

	"plainkube.dev/plainkube/internal/api/nodeutil"
	"plainkube.dev/plainkube/internal/registry"
)

// streamOptions are the pods/exec and pods/attach query parameters.
type streamOptions struct {
	container                  string
	command                    []string
	stdin, stdout, stderr, tty bool
}

// queryBool reads a boolean query parameter as upstream's parameter codec
// does: absent is def, "false" or "0" (any case) is false, anything else
// (even empty) is true.
func queryBool(q url.Values, name string, def bool) bool {
	v, ok := q[name]
	if !ok || len(v) == 0 {
		return def
	}
	switch strings.ToLower(v[0]) {
	case "false", "0":
		return false
	}
	return true
}

// parseStreamOptions reads PodExecOptions or PodAttachOptions from the
// query: stdout and stderr default to true, stdin and tty to false.
func parseStreamOptions(q url.Values, exec bool) (streamOptions, error) {
	o := streamOptions{container: q.Get("container"), command: q["command"],
		stdin: queryBool(q, "stdin", false), stdout: queryBool(q, "stdout", true),
		stderr: queryBool(q, "stderr", true), tty: queryBool(q, "tty", false)}
	if exec && len(o.command) == 0 {
		return o, badRequest("you must specify at least 1 command")
	}
	if !o.stdin && !o.stdout && !o.stderr {
		return o, badRequest("you must specify at least 1 of stdin, stdout, stderr")
	}
	return o, nil
}

// streamingNode finds where a pod's streams are served: the agent's
// address on the pod's node. Pods not yet scheduled, pods of simulated
// nodes and nodes whose agent has no API answer 400 or 501.
func streamingNode(ctx context.Context, api registry.API, pod *corev1.Pod, what string) (string, error) {
	if pod.Spec.NodeName == "" {
		return "", badRequest("pod %s does not have a host assigned", pod.Name)
	}
	node, err := node(ctx, api, pod.Spec.NodeName)
	if err != nil {
		return "", err
	}
	if nodeutil.IsSimulated(node) {
		return "", badRequest("pod %q runs on simulated node %q: simulated pods run no containers, so they cannot %s", pod.Name, node.Name, what)
	}
	addr := nodeutil.AgentAddress(node)
	if api.KubeletClient() == nil || addr == "" {
		return "", notImplemented(fmt.Sprintf("node %q does not serve %s (its agent has no API endpoint)", node.Name, what))
	}
	return addr, nil
}

// Exec, Attach and PortForward serve pods/exec, pods/attach and
// pods/portforward by
// proxying the upgraded connection to the node agent, which hands it to
// the container runtime's streaming server:
//
//   - SPDY (and WebSocket protocols before v5, which the runtime speaks)
//     pass through unchanged;
//   - WebSocket v5.channel.k8s.io exec and attach are translated to SPDY
//     toward the agent (exit codes come back on the error channel);
//   - WebSocket port forwarding tunnels SPDY/3.1+portforward.k8s.io
//     through the WebSocket.
var (
	Exec        = registry.Handler{Serve: servePodStream, OwnForm: true}
	Attach      = registry.Handler{Serve: servePodStream, OwnForm: true}
	PortForward = registry.Handler{Serve: servePodStream, OwnForm: true}
)

func servePodStream(rq *registry.Request) error {
	sub := rq.Subresource
	if rq.R.Method != http.MethodGet && rq.R.Method != http.MethodPost {
		return methodNotAllowed(rq)
	}
	ctx := rq.R.Context()
	// A GET upgrade (WebSockets) also needs create, as upstream.
	if rq.R.Method == http.MethodGet {
		if err := rq.API.Authorize("create"); err != nil {
			return err
		}
	}
	q := rq.R.URL.Query()
	var opts streamOptions
	var ports []string
	var err error
	if sub == "portforward" {
		if ports, err = parseForwardPorts(q["ports"]); err != nil {
			return err
		}
	} else if opts, err = parseStreamOptions(q, sub == "exec"); err != nil {
		return err
	}
	if err := rq.API.AdmitConnect(connectOptions(sub, opts, ports)); err != nil {
		return err
	}
	obj, err := rq.API.Get(ctx, rq.Resource, rq.Namespace, rq.Name)
	if err != nil {
		return err
	}
	pod := obj.(*corev1.Pod)
	what := map[string]string{"exec": "run commands", "attach": "be attached to", "portforward": "forward ports"}[sub]
	if sub != "portforward" {
		if opts.container, err = streamContainer(pod, opts.container); err != nil {
			return err
		}
	}
	addr, err := streamingNode(ctx, rq.API, pod, what)
	if err != nil {
		return err
	}
	loc := &url.URL{Scheme: "https", Host: addr}
	params := url.Values{}
	switch sub {
	case "exec", "attach":
		loc.Path = "/" + sub + "/" + pod.Namespace + "/" + pod.Name + "/" + opts.container
		for k, on := range map[string]bool{"input": opts.stdin, "output": opts.stdout, "error": opts.stderr, "tty": opts.tty} {
			if on {
				params.Set(k, "1")
			}
		}
		for _, c := range opts.command {
			params.Add("command", c)
		}
	case "portforward":
		loc.Path = "/portForward/" + pod.Namespace + "/" + pod.Name
		if len(ports) > 0 {
			params.Set("port", strings.Join(ports, ","))
		}
	}
	loc.RawQuery = params.Encode()
	transport := kubeletTransport(rq.API.KubeletClient())
	upgrade := proxy.NewUpgradeAwareHandler(loc, transport, false, true, statusResponder{rq.API})
	upgrade.RejectForwardingRedirects = true
	var h http.Handler = upgrade
	switch {
	case sub != "portforward" && wsstream.IsWebSocketRequestWithStreamCloseProtocol(rq.R):
		h = apiproxy.NewStreamTranslatorHandler(loc, transport, 0, apiproxy.Options{Stdin: opts.stdin, Stdout: opts.stdout, Stderr: opts.stderr && !opts.tty, Tty: opts.tty})
	case sub == "portforward" && wsstream.IsWebSocketRequestWithTunnelingProtocol(rq.R):
		h = apiproxy.NewTunnelingHandler(upgrade)
	}
	h.ServeHTTP(rq.W, rq.R)
	return nil
}

// connectOptions are a stream request's options as admission sees them:
// PodExecOptions, PodAttachOptions or PodPortForwardOptions.
func connectOptions(sub string, o streamOptions, ports []string) runtime.Object {
	switch sub {
	case "exec":
		return &corev1.PodExecOptions{Stdin: o.stdin, Stdout: o.stdout, Stderr: o.stderr, TTY: o.tty, Container: o.container, Command: o.command}
	case "attach":
		return &corev1.PodAttachOptions{Stdin: o.stdin, Stdout: o.stdout, Stderr: o.stderr, TTY: o.tty, Container: o.container}
	}
	pf := &corev1.PodPortForwardOptions{}
	for _, p := range ports {
		n, _ := strconv.ParseInt(p, 10, 32) // checked by parseForwardPorts
		pf.Ports = append(pf.Ports, int32(n))
	}
	return pf
}

// parseForwardPorts reads PodPortForwardOptions.ports: each a port number
// from 1 to 65535.
func parseForwardPorts(vals []string) ([]string, error) {
	var ports []string
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(p), 10, 16)
			if err != nil || n == 0 {
				return nil, badRequest("invalid port %q: must be a number from 1 to 65535", p)
			}
			ports = append(ports, strconv.FormatUint(n, 10))
		}
	}
	return ports, nil
}

// streamContainer picks the container of an exec or attach session as
// upstream: the named one (any kind), else the only one.
func streamContainer(pod *corev1.Pod, name string) (string, error) {
	if name == "" {
		switch len(pod.Spec.Containers) {
		case 1:
			return pod.Spec.Containers[0].Name, nil
		case 0:
			return "", badRequest("a container name must be specified for pod %s", pod.Name)
		}
		return "", badRequest("a container name must be specified for pod %s, choose one of: %v", pod.Name, containerNames(pod))
	}
	return namedContainer(pod, name)
}
