package printers

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func coreKind(kind string) schema.GroupVersionKind { return gvk("", "v1", kind) }

func init() {
	register(coreKind("Pod"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Ready", "The aggregate readiness state of this pod for accepting traffic."),
		str("Status", "The aggregate status of the containers in this pod."),
		str("Restarts", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
		ageColumn(),
		wide(str("IP", corev1.PodStatus{}.SwaggerDoc()["podIP"])),
		wide(str("Node", corev1.PodSpec{}.SwaggerDoc()["nodeName"])),
		wide(str("Nominated Node", corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"])),
		wide(str("Readiness Gates", corev1.PodSpec{}.SwaggerDoc()["readinessGates"])),
	}, typed(podCells))

	register(coreKind("PodTemplate"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Containers", containersDoc),
		str("Images", imagesDoc),
		str("Pod Labels", "The labels for the pod template."),
	}, typed(func(t *corev1.PodTemplate) []interface{} {
		names, images := containerCells(t.Template.Spec.Containers)
		return row(t.Name, names, images, labels.FormatLabels(t.Template.Labels))
	}))

	register(coreKind("Namespace"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Status", "The status of the namespace"),
		ageColumn(),
	}, typed(func(ns *corev1.Namespace) []interface{} {
		return row(ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp))
	}))

	nodeInfoDoc := corev1.NodeSystemInfo{}.SwaggerDoc()
	nodeAddrDoc := corev1.NodeStatus{}.SwaggerDoc()["addresses"]
	register(coreKind("Node"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Status", "The status of the node"),
		str("Roles", "The roles of the node"),
		ageColumn(),
		str("Version", nodeInfoDoc["kubeletVersion"]),
		wide(str("Internal-IP", nodeAddrDoc)),
		wide(str("External-IP", nodeAddrDoc)),
		wide(str("OS-Image", nodeInfoDoc["osImage"])),
		wide(str("Kernel-Version", nodeInfoDoc["kernelVersion"])),
		wide(str("Container-Runtime", nodeInfoDoc["containerRuntimeVersion"])),
	}, typed(nodeCells))

	svcDoc := corev1.ServiceSpec{}.SwaggerDoc()
	register(coreKind("Service"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Type", svcDoc["type"]),
		str("Cluster-IP", svcDoc["clusterIP"]),
		str("External-IP", svcDoc["externalIPs"]),
		str("Port(s)", svcDoc["ports"]),
		ageColumn(),
		wide(str("Selector", svcDoc["selector"])),
	}, typed(serviceCells))

	register(coreKind("Endpoints"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Endpoints", corev1.Endpoints{}.SwaggerDoc()["subsets"]), //nolint:staticcheck // Endpoints is still served
		ageColumn(),
	}, typed(func(ep *corev1.Endpoints) []interface{} { //nolint:staticcheck // Endpoints is still served
		return row(ep.Name, endpointsCell(ep), age(ep.CreationTimestamp))
	}))

	register(coreKind("ConfigMap"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Data", corev1.ConfigMap{}.SwaggerDoc()["data"]),
		ageColumn(),
	}, typed(func(cm *corev1.ConfigMap) []interface{} {
		return row(cm.Name, int64(len(cm.Data)+len(cm.BinaryData)), age(cm.CreationTimestamp))
	}))

	register(coreKind("Secret"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Type", corev1.Secret{}.SwaggerDoc()["type"]),
		str("Data", corev1.Secret{}.SwaggerDoc()["data"]),
		ageColumn(),
	}, typed(func(s *corev1.Secret) []interface{} {
		// stringData is merged into data on write; count it too in case it
		// was not yet.
		n := len(s.Data)
		for k := range s.StringData {
			if _, dup := s.Data[k]; !dup {
				n++
			}
		}
		return row(s.Name, string(s.Type), int64(n), age(s.CreationTimestamp))
	}))

	register(coreKind("ServiceAccount"), []metav1.TableColumnDefinition{
		nameColumn(),
		ageColumn(),
	}, typed(func(sa *corev1.ServiceAccount) []interface{} {
		return row(sa.Name, age(sa.CreationTimestamp))
	}))

	register(coreKind("Event"), eventColumns(), typed(coreEventCells))

	// Upstream has no printer for LimitRanges: kubectl shows NAME, CREATED AT.
	specs[coreKind("LimitRange")] = defaultSpec

	register(coreKind("ResourceQuota"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Request", "Request represents a minimum amount of cpu/memory that a container may consume."),
		str("Limit", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."),
		ageColumn(),
	}, typed(resourceQuotaCells))

	pvSpecDoc := corev1.PersistentVolumeSpec{}.SwaggerDoc()
	pvStatusDoc := corev1.PersistentVolumeStatus{}.SwaggerDoc()
	register(coreKind("PersistentVolume"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Capacity", pvSpecDoc["capacity"]),
		str("Access Modes", pvSpecDoc["accessModes"]),
		str("Reclaim Policy", pvSpecDoc["persistentVolumeReclaimPolicy"]),
		str("Status", pvStatusDoc["phase"]),
		str("Claim", pvSpecDoc["claimRef"]),
		str("StorageClass", "StorageClass of the pv"),
		str("VolumeAttributesClass", "VolumeAttributesClass of the pv"),
		str("Reason", pvStatusDoc["reason"]),
		ageColumn(),
		wide(str("VolumeMode", pvSpecDoc["volumeMode"])),
	}, typed(persistentVolumeCells))

	pvcSpecDoc := corev1.PersistentVolumeClaimSpec{}.SwaggerDoc()
	pvcStatusDoc := corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()
	register(coreKind("PersistentVolumeClaim"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Status", pvcStatusDoc["phase"]),
		str("Volume", pvcSpecDoc["volumeName"]),
		str("Capacity", pvcStatusDoc["capacity"]),
		str("Access Modes", pvcStatusDoc["accessModes"]),
		str("StorageClass", "StorageClass of the pvc"),
		str("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
		ageColumn(),
		wide(str("VolumeMode", pvcSpecDoc["volumeMode"])),
	}, typed(persistentVolumeClaimCells))

	rcSpecDoc := corev1.ReplicationControllerSpec{}.SwaggerDoc()
	rcStatusDoc := corev1.ReplicationControllerStatus{}.SwaggerDoc()
	register(coreKind("ReplicationController"), []metav1.TableColumnDefinition{
		nameColumn(),
		integer("Desired", rcSpecDoc["replicas"]),
		integer("Current", rcStatusDoc["replicas"]),
		integer("Ready", rcStatusDoc["readyReplicas"]),
		ageColumn(),
		wide(str("Containers", containersDoc)),
		wide(str("Images", imagesDoc)),
		wide(str("Selector", rcSpecDoc["selector"])),
	}, typed(func(rc *corev1.ReplicationController) []interface{} {
		var containers []corev1.Container
		if rc.Spec.Template != nil {
			containers = rc.Spec.Template.Spec.Containers
		}
		names, images := containerCells(containers)
		return row(rc.Name, int64(int32Value(rc.Spec.Replicas)), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas),
			age(rc.CreationTimestamp), names, images, labels.FormatLabels(rc.Spec.Selector))
	}))

	register(coreKind("ComponentStatus"), []metav1.TableColumnDefinition{
		nameColumn(),
		str("Status", "Status of the component conditions"),
		str("Message", "Message of the component conditions"),
		str("Error", "Error of the component conditions"),
	}, typed(func(cs *corev1.ComponentStatus) []interface{} { //nolint:staticcheck // ComponentStatus is still served
		status, message, errText := "Unknown", "", ""
		for _, c := range cs.Conditions {
			if c.Type != corev1.ComponentHealthy {
				continue
			}
			status = "Unhealthy"
			if c.Status == corev1.ConditionTrue {
				status = "Healthy"
			}
			message, errText = c.Message, c.Error
			break
		}
		return row(cs.Name, status, message, errText)
	}))
}

// Pods.

// podCells computes a pod's row the way upstream's printer does: READY counts
// ready regular containers and started, ready sidecars (restartable init
// containers); STATUS is the most telling reason found, in order: the pod's
// phase or reason, the first init container that has not succeeded, the
// regular containers' waiting or terminated reasons, and finally deletion.
func podCells(pod *corev1.Pod) []interface{} {
	total := len(pod.Spec.Containers)
	ready := 0
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}

	sidecars := make(map[string]bool)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
			total++
		}
	}

	// Restarts are counted over init containers while the pod initializes,
	// and over sidecars and regular containers afterwards.
	var all, sidecarOnly restartTally
	initializing := false
	for i := range pod.Status.InitContainerStatuses {
		cs := &pod.Status.InitContainerStatuses[i]
		all.add(cs)
		if sidecars[cs.Name] {
			sidecarOnly.add(cs)
		}
		if t := cs.State.Terminated; t != nil && t.ExitCode == 0 {
			continue
		}
		if sidecars[cs.Name] && cs.Started != nil && *cs.Started {
			if cs.Ready {
				ready++
			}
			continue
		}
		initializing = true
		switch w := cs.State.Waiting; {
		case cs.State.Terminated != nil:
			reason = "Init:" + terminatedReason(cs.State.Terminated)
		case w != nil && w.Reason != "" && w.Reason != "PodInitializing":
			reason = "Init:" + w.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		break
	}

	restarts := all
	if !initializing || podConditionTrue(pod, corev1.PodInitialized) {
		restarts = sidecarOnly
		running := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := &pod.Status.ContainerStatuses[i]
			restarts.add(cs)
			switch {
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				reason = cs.State.Waiting.Reason
			case cs.State.Terminated != nil:
				reason = terminatedReason(cs.State.Terminated)
			case cs.Ready && cs.State.Running != nil:
				running = true
				ready++
			}
		}
		// A pod whose last container completed but another still runs.
		if reason == "Completed" && running {
			if podConditionTrue(pod, corev1.PodReady) {
				reason = "Running"
			} else {
				reason = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == "NodeLost":
			reason = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			reason = "Terminating"
		}
	}

	ip := pod.Status.PodIP
	if len(pod.Status.PodIPs) > 0 {
		ip = pod.Status.PodIPs[0].IP
	}
	gates := "<none>"
	if n := len(pod.Spec.ReadinessGates); n > 0 {
		passed := 0
		for _, g := range pod.Spec.ReadinessGates {
			if podConditionTrue(pod, g.ConditionType) {
				passed++
			}
		}
		gates = fmt.Sprintf("%d/%d", passed, n)
	}
	return row(pod.Name, fmt.Sprintf("%d/%d", ready, total), reason, restarts.String(), age(pod.CreationTimestamp),
		orNone(ip), orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), gates)
}

// restartTally sums container restarts and remembers the latest end of a
// previous run.
type restartTally struct {
	count int
	last  metav1.Time
}

func (r *restartTally) add(cs *corev1.ContainerStatus) {
	r.count += int(cs.RestartCount)
	if t := cs.LastTerminationState.Terminated; t != nil && r.last.Before(&t.FinishedAt) {
		r.last = t.FinishedAt
	}
}

// String is the RESTARTS cell: "0", "4", or "4 (10m ago)".
func (r restartTally) String() string {
	if r.count != 0 && !r.last.IsZero() {
		return fmt.Sprintf("%d (%s ago)", r.count, age(r.last))
	}
	return strconv.Itoa(r.count)
}

func terminatedReason(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

// podConditionTrue reports whether the first condition of type t is True.
func podConditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// containerCells lays out containers' names and images, comma-separated.
func containerCells(containers []corev1.Container) (names, images string) {
	n := make([]string, len(containers))
	im := make([]string, len(containers))
	for i, c := range containers {
		n[i], im[i] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(im, ",")
}

// Nodes.

func nodeCells(node *corev1.Node) []interface{} {
	var status []string
	var readyCond *corev1.NodeCondition
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			readyCond = &node.Status.Conditions[i] // the last one wins, as upstream
		}
	}
	switch {
	case readyCond == nil:
		status = append(status, "Unknown")
	case readyCond.Status == corev1.ConditionTrue:
		status = append(status, "Ready")
	default:
		status = append(status, "NotReady")
	}
	if node.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}

	var roles []string
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			roles = append(roles, strings.TrimPrefix(k, "node-role.kubernetes.io/"))
		case k == "kubernetes.io/role":
			roles = append(roles, v)
		}
	}

	info := node.Status.NodeInfo
	return row(node.Name, strings.Join(status, ","), orNone(strings.Join(sortedSet(roles), ",")),
		age(node.CreationTimestamp), info.KubeletVersion,
		nodeAddress(node, corev1.NodeInternalIP), nodeAddress(node, corev1.NodeExternalIP),
		orUnknown(info.OSImage), orUnknown(info.KernelVersion), orUnknown(info.ContainerRuntimeVersion))
}

func nodeAddress(node *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

// Services.

func serviceCells(svc *corev1.Service) []interface{} {
	clusterIP := svc.Spec.ClusterIP
	if len(svc.Spec.ClusterIPs) > 0 {
		clusterIP = svc.Spec.ClusterIPs[0]
	}
	ports := make([]string, len(svc.Spec.Ports))
	for i, p := range svc.Spec.Ports {
		if p.NodePort > 0 {
			ports[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		} else {
			ports[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		}
	}
	return row(svc.Name, string(svc.Spec.Type), orNone(clusterIP), serviceExternalIP(svc),
		orNone(strings.Join(ports, ",")), age(svc.CreationTimestamp), labels.FormatLabels(svc.Spec.Selector))
}

func serviceExternalIP(svc *corev1.Service) string {
	switch svc.Spec.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
		return orNone(strings.Join(svc.Spec.ExternalIPs, ","))
	case corev1.ServiceTypeLoadBalancer:
		var lb []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			lb = append(lb, firstNonEmpty(in.IP, in.Hostname))
		}
		all := append(sortedSet(lb), svc.Spec.ExternalIPs...)
		if len(all) == 0 {
			return "<pending>"
		}
		return strings.Join(all, ",")
	case corev1.ServiceTypeExternalName:
		return svc.Spec.ExternalName
	}
	return "<unknown>"
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// endpointsCell lists up to three ip:port pairs (bare IPs for subsets
// without ports).
func endpointsCell(ep *corev1.Endpoints) string { //nolint:staticcheck // Endpoints is still served
	if len(ep.Subsets) == 0 {
		return "<none>"
	}
	var list []string
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			for _, a := range ss.Addresses {
				list = append(list, a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	return firstN(list, 3, ",")
}

// Events.

func eventColumns() []metav1.TableColumnDefinition {
	doc := corev1.Event{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		str("Last Seen", doc["lastTimestamp"]),
		str("Type", doc["type"]),
		str("Reason", doc["reason"]),
		str("Object", doc["involvedObject"]),
		wide(str("Subobject", corev1.ObjectReference{}.SwaggerDoc()["fieldPath"])),
		wide(str("Source", doc["source"])),
		str("Message", doc["message"]),
		wide(str("First Seen", doc["firstTimestamp"])),
		wide(str("Count", doc["count"])),
		wide(nameColumn()),
	}
}

func coreEventCells(e *corev1.Event) []interface{} {
	first := age(e.FirstTimestamp)
	if e.FirstTimestamp.IsZero() {
		first = microAge(e.EventTime)
	}
	last := age(e.LastTimestamp)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	if e.Series != nil {
		last = microAge(e.Series.LastObservedTime)
		count = e.Series.Count
	} else if count == 0 {
		count = 1 // singleton events of the new API carry no count
	}
	object := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		object += "/" + e.InvolvedObject.Name
	}
	source := firstNonEmpty(e.Source.Component, e.ReportingController)
	if host := firstNonEmpty(e.Source.Host, e.ReportingInstance); host != "" {
		source += ", " + host
	}
	return row(last, e.Type, e.Reason, object, e.InvolvedObject.FieldPath, source,
		strings.TrimSpace(e.Message), first, int64(count), e.Name)
}

// Resource quotas.

func resourceQuotaCells(q *corev1.ResourceQuota) []interface{} {
	names := make([]string, 0, len(q.Status.Hard))
	for n := range q.Status.Hard {
		names = append(names, string(n))
	}
	sort.Strings(names)
	var requests, limits []string
	for _, n := range names {
		used := q.Status.Used[corev1.ResourceName(n)]
		hard := q.Status.Hard[corev1.ResourceName(n)]
		entry := fmt.Sprintf("%s: %s/%s", n, used.String(), hard.String())
		if strings.HasPrefix(n, "limits.") {
			limits = append(limits, entry)
		} else {
			requests = append(requests, entry)
		}
	}
	return row(q.Name, strings.Join(requests, ", "), strings.Join(limits, ", "), age(q.CreationTimestamp))
}

// Persistent volumes and claims.

const betaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

// accessModes abbreviates access modes in upstream's fixed order.
func accessModes(modes []corev1.PersistentVolumeAccessMode) string {
	has := make(map[corev1.PersistentVolumeAccessMode]bool, len(modes))
	for _, m := range modes {
		has[m] = true
	}
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{
		{corev1.ReadWriteOnce, "RWO"},
		{corev1.ReadOnlyMany, "ROX"},
		{corev1.ReadWriteMany, "RWX"},
		{corev1.ReadWriteOncePod, "RWOP"},
	} {
		if has[m.mode] {
			out = append(out, m.short)
		}
	}
	return strings.Join(out, ",")
}

func persistentVolumeCells(pv *corev1.PersistentVolume) []interface{} {
	claim := ""
	if ref := pv.Spec.ClaimRef; ref != nil {
		claim = ref.Namespace + "/" + ref.Name
	}
	capacity := pv.Spec.Capacity[corev1.ResourceStorage]
	phase := string(pv.Status.Phase)
	if pv.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	class := pv.Spec.StorageClassName
	if a, ok := pv.Annotations[betaStorageClassAnnotation]; ok {
		class = a
	}
	vac := "<unset>"
	if pv.Spec.VolumeAttributesClassName != nil {
		vac = *pv.Spec.VolumeAttributesClassName
	}
	mode := "<unset>"
	if pv.Spec.VolumeMode != nil {
		mode = string(*pv.Spec.VolumeMode)
	}
	return row(pv.Name, capacity.String(), accessModes(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy),
		phase, claim, class, vac, pv.Status.Reason, age(pv.CreationTimestamp), mode)
}

func persistentVolumeClaimCells(pvc *corev1.PersistentVolumeClaim) []interface{} {
	phase := string(pvc.Status.Phase)
	if pvc.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	capacity, modes := "", ""
	if pvc.Spec.VolumeName != "" {
		q := pvc.Status.Capacity[corev1.ResourceStorage]
		capacity, modes = q.String(), accessModes(pvc.Status.AccessModes)
	}
	class := ""
	if a, ok := pvc.Annotations[betaStorageClassAnnotation]; ok {
		class = a
	} else if pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	}
	vac := "<unset>"
	if pvc.Spec.VolumeAttributesClassName != nil {
		vac = *pvc.Spec.VolumeAttributesClassName
	}
	mode := "<unset>"
	if pvc.Spec.VolumeMode != nil {
		mode = string(*pvc.Spec.VolumeMode)
	}
	return row(pvc.Name, phase, pvc.Spec.VolumeName, capacity, modes, class, vac, age(pvc.CreationTimestamp), mode)
}

func int32Value(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
