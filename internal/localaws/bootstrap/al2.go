package bootstrap

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

const bootstrapScript = "/etc/eks/bootstrap.sh"

// parseAL2 finds the /etc/eks/bootstrap.sh command in the user data's
// shell script (the shell parts of a MIME document, or the whole text) and
// reads its arguments: the cluster name, --apiserver-endpoint,
// --b64-cluster-ca, --dns-cluster-ip and the kubelet flags in
// --kubelet-extra-args.
func parseAL2(s string) (Config, error) {
	scripts := []string{s}
	if isMIME(strings.TrimSpace(s)) {
		parts, err := parseMIME(s)
		if err != nil {
			return Config{}, err
		}
		scripts = nil
		for _, p := range parts {
			if p.mediaType == "text/x-shellscript" || p.mediaType == "" {
				scripts = append(scripts, p.body)
			}
		}
	}
	var (
		found []string
		seen  bool
	)
	for i, script := range scripts {
		cmds, err := shellCommands(script)
		if err != nil {
			return Config{}, fmt.Errorf("shell script %d: %w", i+1, err)
		}
		for _, cmd := range cmds {
			if args, ok := bootstrapCommandArgs(cmd); ok {
				found, seen = args, true
			}
		}
	}
	if !seen {
		return Config{}, errors.New("no " + bootstrapScript + " command")
	}
	return bootstrapArgs(found)
}

// bootstrapCommandArgs returns the arguments of a command that runs
// bootstrap.sh (after any VAR=value assignments), or ok=false.
func bootstrapCommandArgs(cmd []string) (args []string, ok bool) {
	for i, w := range cmd {
		if name, _, isAssign := strings.Cut(w, "="); isAssign && isShellName(name) {
			continue
		}
		if w == bootstrapScript || (path.Base(w) == "bootstrap.sh" && strings.Contains(w, "/eks/")) {
			return cmd[i+1:], true
		}
		return nil, false
	}
	return nil, false
}

func isShellName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && !(r >= 'a' && r <= 'z') && !(r >= 'A' && r <= 'Z') && (i == 0 || !(r >= '0' && r <= '9')) {
			return false
		}
	}
	return true
}

// bootstrapArgs reads bootstrap.sh's arguments. Every option takes a value
// (--name value or --name=value); the first other word is the cluster name.
func bootstrapArgs(args []string) (Config, error) {
	var (
		c         Config
		extraArgs string
	)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			if c.ClusterName == "" {
				c.ClusterName = a
			}
			continue
		}
		name, value, hasValue := strings.Cut(a, "=")
		if !hasValue {
			if i+1 >= len(args) {
				return Config{}, fmt.Errorf("bootstrap.sh option %s has no value", name)
			}
			i++
			value = args[i]
		}
		switch name {
		case "--apiserver-endpoint":
			c.APIServerEndpoint = value
		case "--b64-cluster-ca":
			c.CABundle = value
		case "--dns-cluster-ip":
			c.ClusterDNS = []string{value}
		case "--kubelet-extra-args":
			extraArgs = value
		}
	}
	if c.ClusterName == "" {
		return Config{}, errors.New("bootstrap.sh has no cluster name argument")
	}
	words, err := shellWords(extraArgs)
	if err != nil {
		return Config{}, fmt.Errorf("--kubelet-extra-args: %w", err)
	}
	flags, err := parseKubeletArgs(words)
	if err != nil {
		return Config{}, fmt.Errorf("--kubelet-extra-args: %w", err)
	}
	flags.apply(&c)
	return c, nil
}
