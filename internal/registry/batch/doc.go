// Package batch supplies the registry.Resource descriptions of the batch/v1
// group: jobs and cronjobs.
//
// The strategies follow upstream Kubernetes: v1 defaults (parallelism and
// completions 1, backoffLimit 6, NonIndexed completion, suspend false,
// podReplacementPolicy, manualSelector false; cronjob concurrencyPolicy
// Allow and history limits 3/1), the generated selector of a Job — on
// create the template gets the job-name and controller-uid labels (plain
// and batch.kubernetes.io/-prefixed) and spec.selector matches the
// controller-uid, which is why the API server must set metadata.uid before
// PrepareForCreate — and validation with upstream's field paths and
// messages: restartPolicy OnFailure or Never, the pod template immutable
// while a job is not suspended, cron schedules parsed as upstream's cron
// library parses them (see cron.go).
//
// All functions are pure; the API server's generic handlers drive them.
package batch

import (
	// CronJob time zones are checked against the IANA database; embed it so
	// the answer does not depend on the host.
	_ "time/tzdata"

	"plainkube.dev/plainkube/internal/registry"
)

// Resources returns the batch/v1 resources.
func Resources() []registry.Resource {
	return []registry.Resource{jobs(), cronJobs()}
}
