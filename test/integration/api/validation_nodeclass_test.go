package api_test

import "testing"

const baseEC2NodeClass = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: base
spec:
  role: KarpenterNodeRole-dovetail
  amiSelectorTerms:
  - alias: al2023@latest
  subnetSelectorTerms:
  - tags: {karpenter.sh/discovery: dovetail}
  securityGroupSelectorTerms:
  - tags: {karpenter.sh/discovery: dovetail}
  blockDeviceMappings:
  - deviceName: /dev/xvda
    ebs: {volumeSize: 100Gi, volumeType: gp3, encrypted: true}
  kubelet:
    maxPods: 110
`

const baseKWOKNodeClass = `
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata:
  name: base
spec:
  nodeRegistrationDelay: 2s
`

func TestInvalidEC2NodeClasses(t *testing.T) {
	const spec = "spec."
	runInvalidCases(t, map[string]invalidCase{
		"missing subnetSelectorTerms":        {baseEC2NodeClass, []mutation{del(spec + "subnetSelectorTerms")}, spec + "subnetSelectorTerms", "Required value"},
		"empty subnetSelectorTerms":          {baseEC2NodeClass, []mutation{set(spec+"subnetSelectorTerms", []any{})}, spec + "subnetSelectorTerms", "subnetSelectorTerms cannot be empty"},
		"empty subnet term":                  {baseEC2NodeClass, []mutation{set(spec+"subnetSelectorTerms", yamlValue(t, "[{}]"))}, spec + "subnetSelectorTerms[0]", "expected at least one, got none"},
		"subnet id with tags":                {baseEC2NodeClass, []mutation{set(spec+"subnetSelectorTerms", yamlValue(t, "[{id: subnet-123, tags: {a: b}}]"))}, spec + "subnetSelectorTerms[0]", "'id' is mutually exclusive"},
		"subnet id malformed":                {baseEC2NodeClass, []mutation{set(spec+"subnetSelectorTerms", yamlValue(t, "[{id: sn-123}]"))}, spec + "subnetSelectorTerms[0].id", "should match"},
		"subnet tag with empty value":        {baseEC2NodeClass, []mutation{set(spec+"subnetSelectorTerms", yamlValue(t, `[{tags: {a: ""}}]`))}, spec + "subnetSelectorTerms[0].tags", "empty tag keys or values aren't supported"},
		"missing securityGroupSelectorTerms": {baseEC2NodeClass, []mutation{del(spec + "securityGroupSelectorTerms")}, spec + "securityGroupSelectorTerms", "Required value"},
		"empty security group term":          {baseEC2NodeClass, []mutation{set(spec+"securityGroupSelectorTerms", yamlValue(t, "[{}]"))}, spec + "securityGroupSelectorTerms[0]", "expected at least one, got none"},
		"security group id with name":        {baseEC2NodeClass, []mutation{set(spec+"securityGroupSelectorTerms", yamlValue(t, "[{id: sg-123, name: default}]"))}, spec + "securityGroupSelectorTerms[0]", "'id' is mutually exclusive"},
		"security group name with tags":      {baseEC2NodeClass, []mutation{set(spec+"securityGroupSelectorTerms", yamlValue(t, "[{name: default, tags: {a: b}}]"))}, spec + "securityGroupSelectorTerms[0]", "'name' is mutually exclusive"},
		"security group id malformed":        {baseEC2NodeClass, []mutation{set(spec+"securityGroupSelectorTerms", yamlValue(t, "[{id: group-1}]"))}, spec + "securityGroupSelectorTerms[0].id", "should match"},
		"missing amiSelectorTerms":           {baseEC2NodeClass, []mutation{del(spec + "amiSelectorTerms")}, spec + "amiSelectorTerms", "Required value"},
		"empty ami term":                     {baseEC2NodeClass, []mutation{set(spec+"amiSelectorTerms", yamlValue(t, "[{}]")), set(spec+"amiFamily", "AL2023")}, spec + "amiSelectorTerms[0]", "expected at least one, got none"},
		"ami alias with id":                  {baseEC2NodeClass, []mutation{set(spec+"amiSelectorTerms", yamlValue(t, "[{alias: al2023@latest, id: ami-123}]"))}, spec + "amiSelectorTerms[0]", "mutually exclusive"},
		"ami alias with another term":        {baseEC2NodeClass, []mutation{set(spec+"amiSelectorTerms", yamlValue(t, "[{alias: al2023@latest}, {name: my-ami}]"))}, spec + "amiSelectorTerms", "'alias' is mutually exclusive"},
		"ami alias unknown family":           {baseEC2NodeClass, []mutation{set(spec+"amiSelectorTerms", yamlValue(t, "[{alias: ubuntu@latest}]"))}, spec + "amiSelectorTerms[0].alias", "family is not supported"},
		"ami alias without version":          {baseEC2NodeClass, []mutation{set(spec+"amiSelectorTerms", yamlValue(t, "[{alias: al2023}]"))}, spec + "amiSelectorTerms[0].alias", "improperly formatted"},
		"windows alias pinned":               {baseEC2NodeClass, []mutation{set(spec+"amiSelectorTerms", yamlValue(t, "[{alias: windows2022@v20240101}]"))}, spec + "amiSelectorTerms[0].alias", "windows families may only specify version 'latest'"},
		"ami id with name":                   {baseEC2NodeClass, []mutation{set(spec+"amiSelectorTerms", yamlValue(t, "[{id: ami-123, name: my-ami}]")), set(spec+"amiFamily", "AL2023")}, spec + "amiSelectorTerms[0]", "'id' is mutually exclusive"},
		"ami id malformed":                   {baseEC2NodeClass, []mutation{set(spec+"amiSelectorTerms", yamlValue(t, "[{id: image-1}]")), set(spec+"amiFamily", "AL2023")}, spec + "amiSelectorTerms[0].id", "should match"},
		"no alias and no amiFamily":          {baseEC2NodeClass, []mutation{set(spec+"amiSelectorTerms", yamlValue(t, "[{name: my-ami}]"))}, "spec", "amiFamily must be specified if amiSelectorTerms does not contain an alias"},
		"amiFamily differs from alias":       {baseEC2NodeClass, []mutation{set(spec+"amiFamily", "Bottlerocket")}, "spec", "amiFamily must match the family of the alias"},
		"unknown amiFamily":                  {baseEC2NodeClass, []mutation{set(spec+"amiFamily", "Ubuntu")}, spec + "amiFamily", "Unsupported value"},
		"role and instanceProfile":           {baseEC2NodeClass, []mutation{set(spec+"instanceProfile", "my-profile")}, "spec", "must specify exactly one of ['role', 'instanceProfile']"},
		"neither role nor instanceProfile":   {baseEC2NodeClass, []mutation{del(spec + "role")}, "spec", "must specify exactly one of ['role', 'instanceProfile']"},
		"empty role":                         {baseEC2NodeClass, []mutation{set(spec+"role", "")}, spec + "role", "role cannot be empty"},
		"tag eks cluster name":               {baseEC2NodeClass, []mutation{set(spec+"tags", map[string]any{"eks:eks-cluster-name": "x"})}, spec + "tags", "restricted tag matching eks:eks-cluster-name"},
		"tag kubernetes.io/cluster":          {baseEC2NodeClass, []mutation{set(spec+"tags", map[string]any{"kubernetes.io/cluster/dovetail": "owned"})}, spec + "tags", "restricted tag matching kubernetes.io/cluster/"},
		"tag karpenter.sh/nodepool":          {baseEC2NodeClass, []mutation{set(spec+"tags", map[string]any{"karpenter.sh/nodepool": "x"})}, spec + "tags", "restricted tag matching karpenter.sh/nodepool"},
		"tag karpenter.sh/nodeclaim":         {baseEC2NodeClass, []mutation{set(spec+"tags", map[string]any{"karpenter.sh/nodeclaim": "x"})}, spec + "tags", "restricted tag matching karpenter.sh/nodeclaim"},
		"tag karpenter.k8s.aws/ec2nodeclass": {baseEC2NodeClass, []mutation{set(spec+"tags", map[string]any{"karpenter.k8s.aws/ec2nodeclass": "x"})}, spec + "tags", "restricted tag matching karpenter.k8s.aws/ec2nodeclass"},
		"two root volumes":                   {baseEC2NodeClass, []mutation{set(spec+"blockDeviceMappings", yamlValue(t, "[{deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 20Gi}}, {deviceName: /dev/xvdb, rootVolume: true, ebs: {volumeSize: 20Gi}}]"))}, spec + "blockDeviceMappings", "must have only one blockDeviceMappings with rootVolume"},
		"volume without size or snapshot":    {baseEC2NodeClass, []mutation{set(spec+"blockDeviceMappings[0].ebs", map[string]any{"volumeType": "gp3"})}, spec + "blockDeviceMappings[0].ebs", "snapshotID or volumeSize must be defined"},
		"volume too large":                   {baseEC2NodeClass, []mutation{set(spec+"blockDeviceMappings[0].ebs.volumeSize", "60000Gi")}, spec + "blockDeviceMappings[0].ebs.volumeSize", "should match"},
		"unknown volume type":                {baseEC2NodeClass, []mutation{set(spec+"blockDeviceMappings[0].ebs.volumeType", "gp9")}, spec + "blockDeviceMappings[0].ebs.volumeType", "Unsupported value"},
		"unknown httpTokens":                 {baseEC2NodeClass, []mutation{set(spec+"metadataOptions", map[string]any{"httpTokens": "maybe"})}, spec + "metadataOptions.httpTokens", "Unsupported value"},
		"hop limit zero":                     {baseEC2NodeClass, []mutation{set(spec+"metadataOptions", map[string]any{"httpPutResponseHopLimit": int64(0)})}, spec + "metadataOptions.httpPutResponseHopLimit", "greater than or equal to 1"},
		"hop limit above 64":                 {baseEC2NodeClass, []mutation{set(spec+"metadataOptions", map[string]any{"httpPutResponseHopLimit": int64(65)})}, spec + "metadataOptions.httpPutResponseHopLimit", "less than or equal to 64"},
		"unknown instanceStorePolicy":        {baseEC2NodeClass, []mutation{set(spec+"instanceStorePolicy", "RAID1")}, spec + "instanceStorePolicy", "Unsupported value"},
		"kubelet negative maxPods":           {baseEC2NodeClass, []mutation{set(spec+"kubelet.maxPods", -1)}, spec + "kubelet.maxPods", "greater than or equal to 0"},
		"kubelet systemReserved gpu":         {baseEC2NodeClass, []mutation{set(spec+"kubelet.systemReserved", map[string]any{"gpu": "1"})}, spec + "kubelet.systemReserved", "valid keys for systemReserved"},
		"kubelet negative kubeReserved":      {baseEC2NodeClass, []mutation{set(spec+"kubelet.kubeReserved", map[string]any{"cpu": "-100m"})}, spec + "kubelet.kubeReserved", "cannot be a negative resource quantity"},
		"kubelet unknown eviction signal":    {baseEC2NodeClass, []mutation{set(spec+"kubelet.evictionHard", map[string]any{"cpu.available": "10%"})}, spec + "kubelet.evictionHard", "valid keys for evictionHard"},
		"kubelet soft eviction no grace":     {baseEC2NodeClass, []mutation{set(spec+"kubelet.evictionSoft", map[string]any{"memory.available": "5%"}), set(spec+"kubelet.evictionSoftGracePeriod", map[string]any{"nodefs.available": "1m"})}, spec + "kubelet", "does not have a matching"},
		"kubelet image GC thresholds":        {baseEC2NodeClass, []mutation{set(spec+"kubelet.imageGCHighThresholdPercent", 50), set(spec+"kubelet.imageGCLowThresholdPercent", 60)}, spec + "kubelet", "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent"},
		"capacity reservation id":            {baseEC2NodeClass, []mutation{set(spec+"capacityReservationSelectorTerms", yamlValue(t, "[{id: res-1}]"))}, spec + "capacityReservationSelectorTerms[0].id", "should match"},
	})
}

func TestInvalidKWOKNodeClasses(t *testing.T) {
	runInvalidCases(t, map[string]invalidCase{
		"registration delay a word": {baseKWOKNodeClass, []mutation{set("spec.nodeRegistrationDelay", "soon")}, "spec.nodeRegistrationDelay", "should match"},
	})
}
