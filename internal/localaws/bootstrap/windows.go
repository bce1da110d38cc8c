package bootstrap

import (
	"errors"
	"fmt"
	"strings"
)

// parseWindows reads the <powershell> block and the parameters of its
// Start-EKSBootstrap.ps1 call: -EKSClusterName, -APIServerEndpoint,
// -Base64ClusterCA, -KubeletExtraArgs and -DNSClusterIP.
func parseWindows(s string) (Config, error) {
	lower := strings.ToLower(s)
	start := strings.Index(lower, "<powershell>")
	end := strings.Index(lower, "</powershell>")
	if start < 0 || end < start {
		return Config{}, errors.New("no <powershell>...</powershell> block")
	}
	script := s[start+len("<powershell>") : end]
	var call string
	for _, line := range strings.Split(script, "\n") {
		if strings.Contains(strings.ToLower(line), "-eksclustername") {
			call = line
		}
	}
	if call == "" {
		return Config{}, errors.New("no Start-EKSBootstrap.ps1 call with -EKSClusterName")
	}
	words, err := powershellWords(call)
	if err != nil {
		return Config{}, fmt.Errorf("bootstrap call: %w", err)
	}
	var (
		c         Config
		extraArgs string
	)
	for i := 0; i < len(words); i++ {
		w := strings.ToLower(words[i])
		if !strings.HasPrefix(w, "-") || i+1 >= len(words) {
			continue
		}
		var dst *string
		switch w {
		case "-eksclustername":
			dst = &c.ClusterName
		case "-apiserverendpoint":
			dst = &c.APIServerEndpoint
		case "-base64clusterca":
			dst = &c.CABundle
		case "-kubeletextraargs":
			dst = &extraArgs
		case "-dnsclusterip":
			i++
			c.ClusterDNS = []string{words[i]}
			continue
		default:
			continue
		}
		i++
		*dst = words[i]
	}
	if c.ClusterName == "" {
		return Config{}, errors.New("-EKSClusterName has no value")
	}
	args, err := shellWords(extraArgs)
	if err != nil {
		return Config{}, fmt.Errorf("-KubeletExtraArgs: %w", err)
	}
	flags, err := parseKubeletArgs(args)
	if err != nil {
		return Config{}, fmt.Errorf("-KubeletExtraArgs: %w", err)
	}
	flags.apply(&c)
	return c, nil
}
