package kubelet

import (
	"context"
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
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"plainkube.dev/plainkube/internal/api/podspec"
	"plainkube.dev/plainkube/internal/reconcile"
)

// Static pods: pods the agent reads from manifest files in
// Options.ManifestsDir and runs without the API server, as upstream's file
// pod source. Each is mirrored into the API as a mirror pod once the API
// answers; the mirror only reports the static pod, it is never run.

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

// staticPods are the pods of the manifests folder: the current version of
// each, and older versions (replaced or removed) still to be stopped.
type staticPods struct {
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

func newStaticPods() *staticPods {
	return &staticPods{current: map[types.NamespacedName]*corev1.Pod{}, stopping: map[types.NamespacedName][]*corev1.Pod{},
		status: map[types.UID]corev1.PodStatus{}, files: map[string]manifestFile{}, deleting: map[types.UID]time.Time{}}
}

func keyOf(pod *corev1.Pod) types.NamespacedName {
	return types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
}

// scan reads dir (files whose names do not start with a dot; folders are
// not entered) and makes its pods current. A version that is replaced (the
// file changed) or removed moves to stopping, marked for deletion at now.
// It returns the keys whose pods changed.
func (s *staticPods) scan(dir, nodeName string, now time.Time, log func(msg string, args ...any)) []types.NamespacedName {
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
		grace := int64(defaultGrace)
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

// get is the current static pod of key (nil if none) and the versions of
// it still to stop.
func (s *staticPods) get(key types.NamespacedName) (*corev1.Pod, []*corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current[key], append([]*corev1.Pod(nil), s.stopping[key]...)
}

// stopped forgets a stopping version once it no longer runs.
func (s *staticPods) stopped(key types.NamespacedName, uid types.UID) {
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

// keys are every key with a current or stopping static pod.
func (s *staticPods) keys() []types.NamespacedName {
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

// uids are the UIDs of every static pod, current or stopping: their
// sandboxes are not orphans.
func (s *staticPods) uids() []types.UID {
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

func (s *staticPods) lastStatus(uid types.UID) (corev1.PodStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.status[uid]
	return st, ok
}

func (s *staticPods) setStatus(pod *corev1.Pod, st corev1.PodStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur := s.current[keyOf(pod)]; cur != nil && cur.UID == pod.UID {
		s.status[pod.UID] = st
	}
}

// watchManifests scans the manifests folder every SyncInterval and queues
// every static pod: the changed ones, and the others so that container
// exits are noticed (the relist of static pods, which also runs before the
// API server answers).
func (a *Agent) watchManifests(ctx context.Context, q interface{ Add(types.NamespacedName) }) {
	t := time.NewTicker(a.opts.SyncInterval)
	defer t.Stop()
	for {
		a.static.scan(a.opts.ManifestsDir, a.opts.NodeName, time.Now(), a.log.Warn)
		for _, k := range a.static.keys() {
			q.Add(k)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// syncStatic syncs what key names of static pods: it stops replaced and
// removed versions (with their grace period), deletes mirror pods that are
// orphaned, outdated or being deleted, runs the current version, creates
// its mirror pod once the API answers and reports its status there.
// apiPod is the API's pod of key (nil when none or not known yet).
func (a *Agent) syncStatic(ctx context.Context, key types.NamespacedName, apiPod *corev1.Pod) (reconcile.Result, error) {
	if a.static == nil {
		return reconcile.Result{}, nil
	}
	cur, stopping := a.static.get(key)
	var res reconcile.Result
	for _, old := range stopping {
		out, err := a.converge(ctx, old)
		if err != nil {
			return res, err
		}
		if !out.deleted {
			res.RequeueAfter = time.Second
			continue
		}
		if err := a.forgetPod(old.UID); err != nil {
			return res, err
		}
		a.static.stopped(key, old.UID)
		a.log.Info("static pod stopped", "pod", key.String(), "uid", old.UID)
	}
	var mirror *corev1.Pod
	if apiPod != nil && IsMirrorPod(apiPod) {
		mirror = apiPod
		stale := cur == nil || mirror.Annotations[AnnotationConfigMirror] != string(cur.UID)
		if d := mirror.DeletionTimestamp; d != nil && !stale {
			// Being deleted through the API: it goes, and comes back.
			// After a pause, so that clients waiting for the deletion see
			// the object first and then its deletion (kubectl 1.32 waits
			// out its whole timeout when the object vanishes between its
			// get and its list).
			if wait := mirrorDeletePause - time.Since(a.static.deletionSeen(mirror.UID)); wait > 0 {
				res.RequeueAfter = wait
				return res, nil
			}
		}
		if stale || mirror.DeletionTimestamp != nil {
			if err := a.deleteMirror(ctx, mirror); err != nil {
				return res, err
			}
			a.static.deletionDone(mirror.UID)
			mirror = nil
		}
	}
	if cur == nil {
		return res, nil
	}
	if len(stopping) > 0 && res.RequeueAfter > 0 {
		// As upstream, a new version starts once the old one has stopped.
		return res, nil
	}
	pod := cur.DeepCopy()
	switch st, ok := a.static.lastStatus(cur.UID); {
	case mirror != nil:
		pod.Status = *mirror.Status.DeepCopy()
	case ok:
		pod.Status = st
	}
	out, err := a.converge(ctx, pod)
	if !out.observed {
		return res, err
	}
	st := podStatus(pod, out.obs, nodeEnv{HostIP: a.host.ip}, time.Now())
	a.static.setStatus(cur, st)
	if a.apiSynced.Load() {
		if mirror == nil && (apiPod == nil || IsMirrorPod(apiPod)) {
			if cerr := a.createMirror(ctx, cur); cerr != nil && err == nil {
				err = cerr
			}
		} else if mirror != nil && !apiequality.Semantic.DeepEqual(st, mirror.Status) {
			upd := mirror.DeepCopy()
			upd.Status = st
			if _, uerr := a.cs.CoreV1().Pods(key.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{}); uerr != nil && !apierrors.IsNotFound(uerr) && err == nil {
				err = uerr // a conflict requeues: the informer is behind
			}
		}
	}
	if err != nil {
		return res, err
	}
	if !out.next.IsZero() {
		d := max(time.Until(out.next), 10*time.Millisecond)
		if res.RequeueAfter == 0 || d < res.RequeueAfter {
			res.RequeueAfter = d
		}
	}
	return res, nil
}

// mirrorDeletePause is how long a mirror pod deleted through the API stays
// before the agent removes it (and creates it again).
const mirrorDeletePause = time.Second

// deletionSeen is when the agent first saw that mirror pod uid was being
// deleted (API timestamps are only to the second).
func (s *staticPods) deletionSeen(uid types.UID) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.deleting[uid]
	if !ok {
		t = time.Now()
		s.deleting[uid] = t
	}
	return t
}

func (s *staticPods) deletionDone(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.deleting, uid)
}

// createMirror creates the mirror pod of static pod pod: a copy with the
// config.mirror annotation set to its hash, owned by the Node.
func (a *Agent) createMirror(ctx context.Context, pod *corev1.Pod) error {
	m := pod.DeepCopy()
	m.UID, m.ResourceVersion = "", ""
	m.Annotations[AnnotationConfigMirror] = pod.Annotations[AnnotationConfigHash]
	controller := true
	m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: a.opts.NodeName, UID: a.nodeUID, Controller: &controller}}
	m.Status = corev1.PodStatus{}
	_, err := a.cs.CoreV1().Pods(m.Namespace).Create(ctx, m, metav1.CreateOptions{})
	switch {
	case err == nil:
		a.log.Info("mirror pod created", "pod", m.Namespace+"/"+m.Name)
	case apierrors.IsAlreadyExists(err):
		return nil // the informer has not seen it yet, or a pod that is not a mirror has the name
	case apierrors.IsNotFound(err):
		return fmt.Errorf("creating mirror pod %s/%s: %w (does the namespace exist?)", m.Namespace, m.Name, err)
	}
	return err
}

// deleteMirror deletes a mirror pod at once (it comes back if its static
// pod is still there).
func (a *Agent) deleteMirror(ctx context.Context, mirror *corev1.Pod) error {
	zero := int64(0)
	err := a.cs.CoreV1().Pods(mirror.Namespace).Delete(ctx, mirror.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &mirror.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return err
	}
	a.log.Info("mirror pod deleted", "pod", mirror.Namespace+"/"+mirror.Name)
	return nil
}
