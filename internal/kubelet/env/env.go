package env

import (
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"plainkube.dev/plainkube/internal/api/podutil"
)

// Source is what a container's environment may refer to.
type Source struct {
	// ConfigMaps and Secrets of the pod's namespace, by name; a name that
	// is absent was not found.
	ConfigMaps map[string]*corev1.ConfigMap
	Secrets    map[string]*corev1.Secret
	// PodIPs and HostIPs are the pod's and node's addresses, the primary
	// first.
	PodIPs, HostIPs []string
	// Allocatable is the node's: the limits of containers that set none.
	Allocatable corev1.ResourceList
	// Services are the service environment variables (ServiceVars).
	Services map[string]string
}

// Var is one resolved variable.
type Var struct{ Name, Value string }

// Refs are the names of the ConfigMaps and Secrets c's environment
// refers to.
func Refs(c *corev1.Container) (configMaps, secrets []string) {
	add := func(list []string, name string) []string {
		if name == "" || slices.Contains(list, name) {
			return list
		}
		return append(list, name)
	}
	for _, f := range c.EnvFrom {
		if f.ConfigMapRef != nil {
			configMaps = add(configMaps, f.ConfigMapRef.Name)
		}
		if f.SecretRef != nil {
			secrets = add(secrets, f.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			configMaps = add(configMaps, r.Name)
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			secrets = add(secrets, r.Name)
		}
	}
	return configMaps, secrets
}

// Resolve is c's environment in pod. An error (a ConfigMap, Secret
// or key that is missing and not optional, an unsupported field) means
// the container cannot be created: upstream's CreateContainerConfigError.
func Resolve(pod *corev1.Pod, c *corev1.Container, src Source) ([]Var, error) {
	var order []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, f := range c.EnvFrom {
		var data map[string]string
		switch {
		case f.ConfigMapRef != nil:
			cm := src.ConfigMaps[f.ConfigMapRef.Name]
			if cm == nil {
				if optional(f.ConfigMapRef.Optional) {
					continue
				}
				return nil, fmt.Errorf("configmap %q not found", f.ConfigMapRef.Name)
			}
			data = cm.Data
		case f.SecretRef != nil:
			s := src.Secrets[f.SecretRef.Name]
			if s == nil {
				if optional(f.SecretRef.Optional) {
					continue
				}
				return nil, fmt.Errorf("secret %q not found", f.SecretRef.Name)
			}
			data = map[string]string{}
			for k, v := range s.Data {
				data[k] = string(v)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			name := f.Prefix + k
			if len(validation.IsRelaxedEnvVarName(name)) > 0 {
				continue // upstream skips (and reports) invalid names
			}
			set(name, data[k])
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, lookup(vals, src.Services)))
			continue
		}
		v, ok, err := valueFrom(pod, c, e.ValueFrom, src)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			set(e.Name, v)
		}
	}
	out := make([]Var, 0, len(order)+len(src.Services))
	for _, k := range order {
		out = append(out, Var{k, vals[k]})
	}
	// Service variables come last, unless the container sets the name.
	for _, k := range slices.Sorted(maps.Keys(src.Services)) {
		if _, ok := vals[k]; !ok {
			out = append(out, Var{k, src.Services[k]})
		}
	}
	return out, nil
}

// ServiceVars are the service environment variables of a pod in
// namespace ns, as upstream: for each service with a cluster IP — the
// default namespace's "kubernetes" always, the pod's namespace's when
// enableServiceLinks (default true) — <NAME>_SERVICE_HOST,
// <NAME>_SERVICE_PORT (the first port), <NAME>_SERVICE_PORT_<PORT NAME>
// for named ports, and the Docker link variables <NAME>_PORT and
// <NAME>_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR].
func ServiceVars(services []*corev1.Service, ns string, enableLinks *bool) map[string]string {
	links := enableLinks == nil || *enableLinks
	chosen := map[string]*corev1.Service{}
	for _, svc := range services {
		if ip := svc.Spec.ClusterIP; ip == "" || ip == corev1.ClusterIPNone || len(svc.Spec.Ports) == 0 {
			continue
		}
		switch {
		case svc.Namespace == "default" && svc.Name == "kubernetes":
			if _, ok := chosen[svc.Name]; !ok {
				chosen[svc.Name] = svc
			}
		case svc.Namespace == ns && links:
			chosen[svc.Name] = svc
		}
	}
	env := map[string]string{}
	for _, svc := range chosen {
		name := strings.ToUpper(strings.ReplaceAll(svc.Name, "-", "_"))
		ip := svc.Spec.ClusterIP
		env[name+"_SERVICE_HOST"] = ip
		env[name+"_SERVICE_PORT"] = strconv.Itoa(int(svc.Spec.Ports[0].Port))
		for i, sp := range svc.Spec.Ports {
			port := strconv.Itoa(int(sp.Port))
			if sp.Name != "" {
				env[name+"_SERVICE_PORT_"+strings.ToUpper(strings.ReplaceAll(sp.Name, "-", "_"))] = port
			}
			proto := string(sp.Protocol)
			if proto == "" {
				proto = string(corev1.ProtocolTCP)
			}
			url := strings.ToLower(proto) + "://" + net.JoinHostPort(ip, port)
			if i == 0 {
				env[name+"_PORT"] = url
			}
			prefix := name + "_PORT_" + port + "_" + strings.ToUpper(proto)
			env[prefix] = url
			env[prefix+"_PROTO"] = strings.ToLower(proto)
			env[prefix+"_PORT"] = port
			env[prefix+"_ADDR"] = ip
		}
	}
	return env
}

func optional(p *bool) bool { return p != nil && *p }

// valueFrom resolves one env valueFrom of container c; ok is false for an
// optional reference to something absent (the variable is then not set).
func valueFrom(pod *corev1.Pod, c *corev1.Container, from *corev1.EnvVarSource, src Source) (string, bool, error) {
	switch {
	case from.ConfigMapKeyRef != nil:
		r := from.ConfigMapKeyRef
		cm := src.ConfigMaps[r.Name]
		if cm == nil {
			if optional(r.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("configmap %q not found", r.Name)
		}
		if v, ok := cm.Data[r.Key]; ok { // not binaryData, as upstream
			return v, true, nil
		}
		if optional(r.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", r.Key, pod.Namespace, r.Name)
	case from.SecretKeyRef != nil:
		r := from.SecretKeyRef
		s := src.Secrets[r.Name]
		if s == nil {
			if optional(r.Optional) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("secret %q not found", r.Name)
		}
		if v, ok := s.Data[r.Key]; ok {
			return string(v), true, nil
		}
		if optional(r.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", r.Key, pod.Namespace, r.Name)
	case from.FieldRef != nil:
		v, err := PodField(pod, from.FieldRef.FieldPath, src)
		return v, err == nil, err
	case from.ResourceFieldRef != nil:
		if name := from.ResourceFieldRef.ContainerName; name != "" {
			if c = podutil.Container(pod, name); c == nil {
				return "", false, fmt.Errorf("container %q not found in pod %s/%s", name, pod.Namespace, pod.Name)
			}
		}
		v, err := ContainerResource(c, from.ResourceFieldRef, src.Allocatable)
		return v, err == nil, err
	}
	return "", false, fmt.Errorf("empty valueFrom")
}

// PodField is the value of a downward-API field path.
func PodField(pod *corev1.Pod, path string, src Source) (string, error) {
	if k, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[k], nil
	}
	if k, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[k], nil
	}
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		return first(src.PodIPs), nil
	case "status.podIPs":
		return strings.Join(src.PodIPs, ","), nil
	case "status.hostIP":
		return first(src.HostIPs), nil
	case "status.hostIPs":
		return strings.Join(src.HostIPs, ","), nil
	}
	return "", fmt.Errorf("unsupported fieldPath %q", path)
}

func first(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return list[0]
}

// ContainerResource is the value of a resourceFieldRef of container c,
// as upstream: limits.{cpu,memory,ephemeral-storage} (the node's
// allocatable where c sets no limit), requests.{…}, and hugepages
// limits and requests, divided by the divisor (default 1) and rounded
// up.
func ContainerResource(c *corev1.Container, ref *corev1.ResourceFieldSelector, allocatable corev1.ResourceList) (string, error) {
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
	}
	rn := corev1.ResourceName(name)
	switch {
	case rn == corev1.ResourceCPU, rn == corev1.ResourceMemory, rn == corev1.ResourceEphemeralStorage:
	case strings.HasPrefix(name, corev1.ResourceHugePagesPrefix):
	default:
		return "", fmt.Errorf("unsupported container resource : %v", ref.Resource)
	}
	list := c.Resources.Requests
	if kind == "limits" {
		list = c.Resources.Limits
	}
	q, set := list[rn]
	if kind == "limits" && (!set || q.IsZero()) && !strings.HasPrefix(name, corev1.ResourceHugePagesPrefix) {
		q = allocatable[rn]
	}
	var v int64
	if rn == corev1.ResourceCPU {
		v = int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))
	} else {
		v = int64(math.Ceil(float64(q.Value()) / float64(divisor.Value())))
	}
	return strconv.FormatInt(v, 10), nil
}

// subscript splits "field['key']" into key.
func subscript(path, field string) (string, bool) {
	rest, ok := strings.CutPrefix(path, field+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// formatMap is upstream's downward-API rendering of labels or
// annotations: key="value" lines, sorted by key.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

// Expand expands $(VAR) in s with vars, as a subPathExpr is.
func Expand(s string, vars []Var) string { return ExpandAll([]string{s}, vars)[0] }

// ExpandAll expands $(VAR) in each of list with env.
func ExpandAll(list []string, env []Var) []string {
	if list == nil {
		return nil
	}
	m := map[string]string{}
	for _, e := range env {
		m[e.Name] = e.Value
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = expand(s, lookup(m, nil))
	}
	return out
}

// lookup maps a variable to its value in the first of maps that has it,
// or leaves a reference to an unknown one as it was.
func lookup(maps ...map[string]string) func(string) string {
	return func(name string) string {
		for _, m := range maps {
			if v, ok := m[name]; ok {
				return v
			}
		}
		return "$(" + name + ")"
	}
}

// expand is upstream's $(VAR) expansion: $(NAME) is replaced by
// mapping(NAME), $$ is an escaped $, and anything else (a lone $, an
// unclosed "$(") stays as written.
func expand(input string, mapping func(string) string) string {
	var b strings.Builder
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != '$' || cursor+1 >= len(input) {
			continue
		}
		b.WriteString(input[checkpoint:cursor])
		read, isVar, advance := readVariable(input[cursor+1:])
		if isVar {
			b.WriteString(mapping(read))
		} else {
			b.WriteString(read)
		}
		cursor += advance
		checkpoint = cursor + 1
	}
	return b.String() + input[checkpoint:]
}

// readVariable reads what follows a $: the name of a $(NAME) reference
// (isVar), or the text to write instead; advance is how many bytes of
// input it took.
func readVariable(input string) (read string, isVar bool, advance int) {
	switch input[0] {
	case '$':
		return "$", false, 1
	case '(':
		for i := 1; i < len(input); i++ {
			if input[i] == ')' {
				return input[1:i], true, i + 1
			}
		}
		return "$(", false, 1
	default:
		return "$" + input[:1], false, 1
	}
}
