package userdata

import (
	"errors"
	"fmt"
	"strings"
)

const windowsScriptLine = `[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1"`

// renderWindows writes a PowerShell script: the user's data first, then the
// call to Start-EKSBootstrap.ps1.
func renderWindows(o Options) (string, error) {
	if err := validateWindows(deref(o.CustomUserData)); err != nil {
		return "", &InvalidUserDataError{Family: o.Family, Err: err}
	}
	var b strings.Builder
	b.WriteString("<powershell>\n")
	if ud := deref(o.CustomUserData); ud != "" {
		b.WriteString(ud + "\n")
	}
	b.WriteString(windowsScriptLine + "\n")
	fmt.Fprintf(&b, "& $EKSBootstrapScriptFile -EKSClusterName '%s' -APIServerEndpoint '%s'", o.ClusterName, o.ClusterEndpoint)
	if o.CABundle != "" {
		fmt.Fprintf(&b, " -Base64ClusterCA '%s'", o.CABundle)
	}
	if args := kubeletExtraArgs(o); args != "" {
		fmt.Fprintf(&b, " -KubeletExtraArgs '%s'", args)
	}
	if dns := o.clusterDNS(); len(dns) > 0 {
		fmt.Fprintf(&b, " -DNSClusterIP '%s'", dns[0])
	}
	b.WriteString("\n</powershell>")
	return b.String(), nil
}

// validateWindows rejects PowerShell tags: the user's data is inserted
// inside Karpenter's own <powershell> block, so tags would end it early.
func validateWindows(s string) error {
	lower := strings.ToLower(s)
	if strings.Contains(lower, "<powershell>") || strings.Contains(lower, "</powershell>") {
		return errors.New("it must not contain <powershell> tags: it is inserted into the bootstrap script's own <powershell> block")
	}
	return nil
}
