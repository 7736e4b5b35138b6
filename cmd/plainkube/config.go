package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"

	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"
)

// DefaultConfigFile is read by 'plainkube server' and 'plainkube agent'
// when it exists, as k3s reads /etc/rancher/k3s/config.yaml.
const DefaultConfigFile = "/etc/plainkube/config.yaml"

// daemonFlags are the flags every long-running command has: its
// configuration file, and how it logs.
type daemonFlags struct {
	config      *string
	printConfig *bool
	logLevel    *string
	logFormat   *string
	verbosity   *int
}

func addDaemonFlags(fs *flag.FlagSet) *daemonFlags {
	return &daemonFlags{
		config: fs.String("config", DefaultConfigFile, "YAML file of flags (keys are flag names without the dashes; a list is a comma-separated flag); "+
			"flags given on the command line win; the default file is read only if it exists"),
		printConfig: fs.Bool("print-config", false, "print the effective configuration (the file's and the command line's flags, and the defaults) as YAML, and exit"),
		logLevel:    fs.String("log-level", "info", "debug, info, warn or error"),
		logFormat:   fs.String("log-format", "text", "text (key=value) or json (one object per line)"),
		verbosity: fs.Int("v", 0, "verbosity, as upstream's components' -v: 2 and 3 add detail (3: a line per API request, as upstream's httplog), 4 is debug; "+
			"it lowers --log-level, never raises it"),
	}
}

// parse parses args, then sets every flag the configuration file names
// and args did not. printed is true when --print-config asked for the
// configuration alone (it is on stdout then).
func (d *daemonFlags) parse(fs *flag.FlagSet, args []string) (printed bool, err error) {
	if err := fs.Parse(args); err != nil {
		return false, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if err := applyConfigFile(fs, *d.config, given); err != nil {
		return false, err
	}
	if *d.printConfig {
		return true, printConfig(os.Stdout, fs)
	}
	return false, nil
}

// applyConfigFile sets the flags path names that given does not have. A
// missing file is an error only if it is not the default one.
func applyConfigFile(set *flag.FlagSet, path string, given map[string]bool) error {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !given["config"] {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "config" || k == "print-config" || set.Lookup(k) == nil {
			return fmt.Errorf("config file %s: %q is not a flag of 'plainkube %s'", path, k, set.Name())
		}
		if given[k] {
			continue
		}
		// A list is the flag's comma-separated items.
		items, ok := values[k].([]any)
		if !ok {
			items = []any{values[k]}
		}
		texts := make([]string, len(items))
		for i, item := range items {
			if texts[i], err = flagText(item); err != nil {
				return fmt.Errorf("config file %s: %s: %w", path, k, err)
			}
		}
		if err := set.Set(k, strings.Join(texts, ",")); err != nil {
			return fmt.Errorf("config file %s: %s: %w", path, k, err)
		}
	}
	return nil
}

// flagText is a YAML scalar as a flag's command-line text.
func flagText(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case nil:
		return "", nil
	}
	return "", fmt.Errorf("a %T is not a flag value (a string, number, boolean or a list of them)", v)
}

// printConfig writes every flag's value as YAML, which --config reads back.
func printConfig(w io.Writer, fs *flag.FlagSet) error {
	values := map[string]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name != "config" && f.Name != "print-config" {
			values[f.Name] = f.Value.String()
		}
	})
	out, err := yaml.Marshal(values)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// logger is the process's logger, as --log-level and --log-format say.
func (d *daemonFlags) logger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(*d.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	// -v=N is slog level -N: Info is -v=0, Debug -v=4.
	if v := slog.Level(-*d.verbosity); v < level {
		level = v
	}
	opts := &slog.HandlerOptions{Level: level}
	var log *slog.Logger
	switch strings.ToLower(*d.logFormat) {
	case "text":
		log = slog.New(slog.NewTextHandler(os.Stderr, opts))
	case "json":
		log = slog.New(slog.NewJSONHandler(os.Stderr, opts))
	default:
		return nil, fmt.Errorf("--log-format: %q is neither text nor json", *d.logFormat)
	}
	// What the client-go packages log through klog (leader election,
	// informers' errors) is said in the same format, not klog's own.
	klog.SetSlogLogger(log.With("component", "client-go"))
	return log, nil
}
