package static

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"plainkube.dev/plainkube/internal/api/podspec"
)

// Annotations of static and mirror pods (upstream's keys).
const (
	AnnotationConfigSource = "kubernetes.io/config.source"
	AnnotationConfigHash   = "kubernetes.io/config.hash"
	AnnotationConfigSeen   = "kubernetes.io/config.seen"
	AnnotationConfigMirror = "kubernetes.io/config.mirror"
)

// IsMirrorPod reports whether pod is the API's mirror of a static pod.
func IsMirrorPod(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[AnnotationConfigMirror]
	return ok
}

// parseManifest reads one manifest file's content (a Pod in YAML or JSON)
// into the static pod it describes on node nodeName: defaulted as the API
// would, its UID and config.hash a hash of the pod, the node and the file
// path, named <name>-<nodeName>, in namespace "default" unless it names
// one, bound to the node, tolerating every NoExecute taint, Pending.
// config.seen is left to the caller.
func parseManifest(path string, data []byte, nodeName string) (*corev1.Pod, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return nil, err
	}
	if tm.APIVersion != "v1" || tm.Kind != "Pod" {
		return nil, fmt.Errorf("want apiVersion v1 and kind Pod, got %q %q", tm.APIVersion, tm.Kind)
	}
	pod := &corev1.Pod{}
	if err := yaml.Unmarshal(data, pod); err != nil {
		return nil, err
	}
	if pod.Name == "" {
		return nil, errors.New("metadata.name is required")
	}
	podspec.DefaultPod(pod)
	if pod.UID == "" {
		h := fnv.New128a()
		b, err := json.Marshal(pod)
		if err != nil {
			return nil, err
		}
		h.Write(b)
		fmt.Fprintf(h, "host:%s", nodeName)
		fmt.Fprintf(h, "file:%s", path)
		pod.UID = types.UID(hex.EncodeToString(h.Sum(nil)))
	}
	pod.Name = pod.Name + "-" + nodeName
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = nodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationConfigHash] = string(pod.UID)
	pod.Annotations[AnnotationConfigSource] = "file"
	delete(pod.Annotations, AnnotationConfigMirror)
	tolerateAll := corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}
	has := false
	for _, t := range pod.Spec.Tolerations {
		has = has || (t.Key == "" && t.Operator == tolerateAll.Operator && t.Effect == tolerateAll.Effect)
	}
	if !has {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, tolerateAll)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending}
	if msgs := apivalidation.NameIsDNSSubdomain(pod.Name, false); len(msgs) > 0 {
		return nil, fmt.Errorf("metadata.name %q: %s", pod.Name, msgs[0])
	}
	if errs := podspec.ValidatePodCreate(pod); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return pod, nil
}

// Pods are the pods of the manifests folder: the current version of
// each, and older versions (replaced or removed) still to be stopped. It
// is safe for concurrent use.
type Pods struct {
	mu       sync.Mutex
	current  map[types.NamespacedName]*corev1.Pod
	stopping map[types.NamespacedName][]*corev1.Pod
	// status is the last status computed for each static pod, kept for
	// when it has no mirror pod.
	status map[types.UID]corev1.PodStatus
	// files remembers each file's content digest and pod, so that an
	// unchanged file is not parsed again (and keeps its config.seen).
	files map[string]manifestFile
	// deleting has when each mirror pod being deleted was first seen so.
	deleting map[types.UID]time.Time
}

type manifestFile struct {
	digest [32]byte
	pod    *corev1.Pod // nil: the file is invalid
}

// NewPods makes an empty set of static pods; Scan fills it.
func NewPods() *Pods {
	return &Pods{current: map[types.NamespacedName]*corev1.Pod{}, stopping: map[types.NamespacedName][]*corev1.Pod{},
		status: map[types.UID]corev1.PodStatus{}, files: map[string]manifestFile{}, deleting: map[types.UID]time.Time{}}
}

func keyOf(pod *corev1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
}

// Scan reads dir (files whose names do not start with a dot; folders are
// not entered) and makes its pods current. A version that is replaced (the
// file changed) or removed moves to stopping, marked for deletion at now.
// It returns the keys whose pods changed.
func (s *Pods) Scan(dir, nodeName string, now time.Time, log func(msg string, args ...any)) []types.NamespacedName {
	paths, _ := filepath.Glob(filepath.Join(dir, "[^.]*"))
	sort.Strings(paths)
	s.mu.Lock()
	defer s.mu.Unlock()
	files := map[string]manifestFile{}
	next := map[types.NamespacedName]*corev1.Pod{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		f := manifestFile{digest: sha256.Sum256(data)}
		if old, ok := s.files[p]; ok && old.digest == f.digest {
			f.pod = old.pod
		} else {
			pod, err := parseManifest(p, data, nodeName)
			if err != nil {
				log("invalid static pod manifest; ignored", "file", p, "err", err)
			} else {
				pod.Annotations[AnnotationConfigSeen] = now.UTC().Format(time.RFC3339Nano)
				f.pod = pod
			}
		}
		files[p] = f
		if f.pod == nil {
			continue
		}
		k := keyOf(f.pod)
		if other, dup := next[k]; dup {
			if other.UID != f.pod.UID {
				log("static pod defined twice; the first file wins", "pod", k.String(), "file", p)
			}
			continue
		}
		next[k] = f.pod
	}
	s.files = files
	var changed []types.NamespacedName
	for k, old := range s.current {
		if cur, ok := next[k]; ok && cur.UID == old.UID {
			continue
		}
		gone := old.DeepCopy()
		t := metav1.NewTime(now)
		gone.DeletionTimestamp = &t
		grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
		if old.Spec.TerminationGracePeriodSeconds != nil {
			grace = *old.Spec.TerminationGracePeriodSeconds
		}
		gone.DeletionGracePeriodSeconds = &grace
		s.stopping[k] = append(s.stopping[k], gone)
		delete(s.status, old.UID)
		changed = append(changed, k)
	}
	for k, cur := range next {
		if old, ok := s.current[k]; !ok || old.UID != cur.UID {
			changed = append(changed, k)
		}
	}
	s.current = next
	return changed
}

// Get is the current static pod of key (nil if none) and the versions of
// it still to stop.
func (s *Pods) Get(key types.NamespacedName) (*corev1.Pod, []*corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current[key], append([]*corev1.Pod(nil), s.stopping[key]...)
}

// Stopped forgets a stopping version once it no longer runs.
func (s *Pods) Stopped(key types.NamespacedName, uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.stopping[key]
	for i, p := range list {
		if p.UID == uid {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(s.stopping, key)
	} else {
		s.stopping[key] = list
	}
}

// Keys are every key with a current or stopping static pod.
func (s *Pods) Keys() []types.NamespacedName {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []types.NamespacedName
	for k := range s.current {
		out = append(out, k)
	}
	for k := range s.stopping {
		if _, ok := s.current[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// UIDs are the UIDs of every static pod, current or stopping: their
// sandboxes are not orphans.
func (s *Pods) UIDs() []types.UID {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []types.UID
	for _, p := range s.current {
		out = append(out, p.UID)
	}
	for _, list := range s.stopping {
		for _, p := range list {
			out = append(out, p.UID)
		}
	}
	return out
}

func (s *Pods) LastStatus(uid types.UID) (corev1.PodStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.status[uid]
	return st, ok
}

func (s *Pods) SetStatus(pod *corev1.Pod, st corev1.PodStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.current[keyOf(pod)]; cur != nil && cur.UID == pod.UID {
		s.status[pod.UID] = st
	}
}

// DeletionSeen is when the agent first saw that mirror pod uid was being
// deleted (API timestamps are only to the second).
func (s *Pods) DeletionSeen(uid types.UID) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.deleting[uid]
	if !ok {
		t = time.Now()
		s.deleting[uid] = t
	}
	return t
}

func (s *Pods) DeletionDone(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.deleting, uid)
}
