package main

import (
	"fmt"
	"io"
	"strings"
)

// subcommands are the words 'plainkube' takes first (usage lists them).
var subcommands = []string{"server", "agent", "controller-manager", "scheduler", "sim", "bench", "image", "token",
	"etcd-snapshot", "cleanup", "envtest-assets", "install", "uninstall", "dev", "kubectl", "completion", "version"}

// The completion scripts complete the subcommand, then a subcommand's
// flags as its own -h lists them (so they are never out of date), and
// after 'plainkube kubectl' whatever kubectl completes (its __complete).
const bashCompletion = `# plainkube completion for bash: source <(plainkube completion bash)
_plainkube() {
  local cur=${COMP_WORDS[COMP_CWORD]} self=${COMP_WORDS[0]} sub=${COMP_WORDS[1]}
  COMPREPLY=()
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "%s" -- "$cur"))
    return
  fi
  if [ "$sub" = kubectl ]; then
    local IFS=$'\n'
    COMPREPLY=($("$self" kubectl __complete "${COMP_WORDS[@]:2:COMP_CWORD-2}" "$cur" 2>/dev/null | sed -e '/^:/d' -e 's/\t.*//'))
    return
  fi
  if [ "$sub" = completion ]; then
    COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur"))
    return
  fi
  case $cur in
  -*) COMPREPLY=($(compgen -W "$("$self" "$sub" -h 2>&1 | sed -n 's/^  -\([a-z0-9-]*\).*/--\1/p')" -- "$cur")) ;;
  esac
}
complete -o default -F _plainkube plainkube
`

const fishCompletion = `# plainkube completion for fish: plainkube completion fish | source
function __plainkube_flags
    set -l words (commandline -opc)
    command $words[1] $words[2] -h 2>&1 | string replace -rf '^  -([a-z0-9-]+).*' -- '--$1'
end
function __plainkube_kubectl
    set -l words (commandline -opc)
    command $words[1] kubectl __complete $words[3..-1] (commandline -ct) 2>/dev/null | string match -rv '^:' | string replace -r '\t.*' ''
end
complete -c plainkube -f -n '__fish_use_subcommand' -a '%s'
complete -c plainkube -f -n '__fish_seen_subcommand_from kubectl' -a '(__plainkube_kubectl)'
complete -c plainkube -f -n '__fish_seen_subcommand_from completion' -a 'bash zsh fish'
complete -c plainkube -f -n 'not __fish_use_subcommand; and not __fish_seen_subcommand_from kubectl completion' -a '(__plainkube_flags)'
`

// runCompletion prints the completion script of a shell (zsh runs the
// bash one through bashcompinit).
func runCompletion(args []string, w io.Writer) error {
	words := strings.Join(subcommands, " ")
	if len(args) != 1 {
		return fmt.Errorf("usage: plainkube completion bash|zsh|fish")
	}
	var err error
	switch args[0] {
	case "bash":
		_, err = fmt.Fprintf(w, bashCompletion, words)
	case "zsh":
		_, err = fmt.Fprintf(w, "# plainkube completion for zsh: source <(plainkube completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n"+bashCompletion, words)
	case "fish":
		_, err = fmt.Fprintf(w, fishCompletion, words)
	default:
		return fmt.Errorf("completion: %q is not bash, zsh or fish", args[0])
	}
	return err
}
