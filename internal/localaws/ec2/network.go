package ec2

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// VPC is a virtual private cloud of the account.
type VPC struct {
	// ID is e.g. vpc-0123456789abcdef0; generated when empty.
	ID string
	// CIDR is the VPC's IPv4 block, e.g. 10.0.0.0/16.
	CIDR string
	// Tags are the VPC's tags.
	Tags map[string]string
}

// Subnet is a subnet of a VPC in one availability zone.
type Subnet struct {
	// ID is e.g. subnet-0123456789abcdef0; generated when empty.
	ID string
	// VPCID is the VPC the subnet belongs to; it must have been added.
	VPCID string
	// Zone is the availability zone, e.g. us-east-1a.
	Zone string
	// ZoneID is the zone id, e.g. use1-az1; derived from Zone when empty.
	ZoneID string
	// CIDR is the subnet's IPv4 block; it must lie inside the VPC's.
	CIDR string
	// AvailableIPs is the number of free addresses: the block's size less
	// the 5 EC2 reserves, less one per instance in the subnet that is not
	// terminated. It is computed; AddSubnet ignores it.
	AvailableIPs int
	// Tags are the subnet's tags.
	Tags map[string]string
}

// SecurityGroup is a security group of a VPC.
type SecurityGroup struct {
	// ID is e.g. sg-0123456789abcdef0; generated when empty.
	ID string
	// Name is the group name, unique within the VPC.
	Name string
	// Description is the group description.
	Description string
	// VPCID is the VPC the group belongs to; it must have been added.
	VPCID string
	// Tags are the group's tags.
	Tags map[string]string
}

// subnet is a Subnet with its parsed block and address bookkeeping.
type subnet struct {
	Subnet
	prefix netip.Prefix
	used   map[string]bool
	// next is the offset in the block where the search for a free address
	// starts: after the last one handed out.
	next uint32
}

// reservedAddresses is how many addresses EC2 keeps in every subnet.
const reservedAddresses = 5

// AddVPC adds a VPC and returns it with its id.
func (s *Service) AddVPC(v VPC) (VPC, error) {
	if _, err := netip.ParsePrefix(v.CIDR); err != nil {
		return VPC{}, fmt.Errorf("adding VPC %q: CIDR: %w", v.ID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v.ID == "" {
		v.ID = s.newIDLocked("vpc")
	}
	if s.vpcLocked(v.ID) != nil {
		return VPC{}, fmt.Errorf("adding VPC %s: already exists", v.ID)
	}
	v.Tags = cloneTags(v.Tags)
	s.st.vpcs = append(s.st.vpcs, &v)
	out := v
	out.Tags = cloneTags(v.Tags)
	return out, nil
}

// VPCs returns the account's VPCs in the order they were added.
func (s *Service) VPCs() []VPC {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]VPC, len(s.st.vpcs))
	for i, v := range s.st.vpcs {
		out[i] = *v
		out[i].Tags = cloneTags(v.Tags)
	}
	return out
}

// AddSubnet adds a subnet to an added VPC and returns it with its id, zone
// id and available address count.
func (s *Service) AddSubnet(sn Subnet) (Subnet, error) {
	prefix, err := netip.ParsePrefix(sn.CIDR)
	if err != nil || !prefix.Addr().Is4() {
		return Subnet{}, fmt.Errorf("adding subnet %q: CIDR %q is not an IPv4 block (%v)", sn.ID, sn.CIDR, err) //nolint:errorlint // err is nil when the block is IPv6; the message, not the chain, matters
	}
	if prefix.Bits() > 28 || prefix.Bits() < 16 {
		return Subnet{}, fmt.Errorf("adding subnet %q: CIDR %s: EC2 subnets are /16 to /28", sn.ID, sn.CIDR)
	}
	if !strings.HasPrefix(sn.Zone, s.cfg.Region) {
		return Subnet{}, fmt.Errorf("adding subnet %q: zone %q is not in region %s", sn.ID, sn.Zone, s.cfg.Region)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vpc := s.vpcLocked(sn.VPCID)
	if vpc == nil {
		return Subnet{}, fmt.Errorf("adding subnet %q: VPC %q not found", sn.ID, sn.VPCID)
	}
	if vp, err := netip.ParsePrefix(vpc.CIDR); err == nil && (!vp.Contains(prefix.Addr()) || vp.Bits() > prefix.Bits()) {
		return Subnet{}, fmt.Errorf("adding subnet %q: CIDR %s is not inside VPC %s's %s", sn.ID, sn.CIDR, vpc.ID, vpc.CIDR)
	}
	if sn.ID == "" {
		sn.ID = s.newIDLocked("subnet")
	}
	if s.subnetLocked(sn.ID) != nil {
		return Subnet{}, fmt.Errorf("adding subnet %s: already exists", sn.ID)
	}
	if sn.ZoneID == "" {
		sn.ZoneID = s.zoneIDLocked(sn.Zone)
	}
	sn.Tags = cloneTags(sn.Tags)
	sub := &subnet{Subnet: sn, prefix: prefix.Masked(), used: map[string]bool{}}
	sub.AvailableIPs = sub.size() - reservedAddresses
	s.st.subnets = append(s.st.subnets, sub)
	return sub.public(), nil
}

// Subnets returns the account's subnets in the order they were added.
func (s *Service) Subnets() []Subnet {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Subnet, len(s.st.subnets))
	for i, sn := range s.st.subnets {
		out[i] = sn.public()
	}
	return out
}

// AddSecurityGroup adds a security group to an added VPC and returns it
// with its id.
func (s *Service) AddSecurityGroup(g SecurityGroup) (SecurityGroup, error) {
	if g.Name == "" {
		return SecurityGroup{}, fmt.Errorf("adding security group %q: a name is required", g.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vpcLocked(g.VPCID) == nil {
		return SecurityGroup{}, fmt.Errorf("adding security group %q: VPC %q not found", g.Name, g.VPCID)
	}
	for _, o := range s.st.groups {
		if o.VPCID == g.VPCID && o.Name == g.Name {
			return SecurityGroup{}, fmt.Errorf("adding security group %q: the name is taken in %s by %s", g.Name, g.VPCID, o.ID)
		}
	}
	if g.ID == "" {
		g.ID = s.newIDLocked("sg")
	}
	if s.groupLocked(g.ID) != nil {
		return SecurityGroup{}, fmt.Errorf("adding security group %s: already exists", g.ID)
	}
	g.Tags = cloneTags(g.Tags)
	s.st.groups = append(s.st.groups, &g)
	out := g
	out.Tags = cloneTags(g.Tags)
	return out, nil
}

// SecurityGroups returns the account's security groups in the order they
// were added.
func (s *Service) SecurityGroups() []SecurityGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]SecurityGroup, len(s.st.groups))
	for i, g := range s.st.groups {
		out[i] = *g
		out[i].Tags = cloneTags(g.Tags)
	}
	return out
}

// public copies a subnet out of the state.
func (sn *subnet) public() Subnet {
	out := sn.Subnet
	out.Tags = cloneTags(sn.Tags)
	return out
}

// size is the number of addresses in the subnet's block.
func (sn *subnet) size() int { return 1 << (32 - sn.prefix.Bits()) }

// allocate returns the next free address after the one it handed out last
// (wrapping past the end of the block, and never one of the 4 reserved at
// its start or the broadcast address), or false when the subnet is full. A
// just-released address is therefore not reused at once, as on EC2, where a
// new instance rarely gets the address (and so the node name) of one that
// has just terminated and whose Node may still be draining.
func (sn *subnet) allocate() (netip.Addr, bool) {
	if sn.AvailableIPs <= 0 {
		return netip.Addr{}, false
	}
	base := sn.prefix.Addr().As4()
	start := binary.BigEndian.Uint32(base[:])
	first, last := uint32(4), uint32(sn.size()-2)
	if sn.next < first || sn.next > last {
		sn.next = first
	}
	for i := uint32(0); i <= last-first; i++ {
		off := first + (sn.next-first+i)%(last-first+1)
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], start+off)
		a := netip.AddrFrom4(b)
		if !sn.used[a.String()] {
			sn.used[a.String()] = true
			sn.AvailableIPs--
			sn.next = off + 1
			return a, true
		}
	}
	return netip.Addr{}, false
}

// release frees an address allocated by allocate.
func (sn *subnet) release(ip string) {
	if sn.used[ip] {
		delete(sn.used, ip)
		sn.AvailableIPs++
	}
}

// vpcLocked finds a VPC by id.
func (s *Service) vpcLocked(id string) *VPC {
	for _, v := range s.st.vpcs {
		if v.ID == id {
			return v
		}
	}
	return nil
}

// subnetLocked finds a subnet by id.
func (s *Service) subnetLocked(id string) *subnet {
	for _, sn := range s.st.subnets {
		if sn.ID == id {
			return sn
		}
	}
	return nil
}

// groupLocked finds a security group by id.
func (s *Service) groupLocked(id string) *SecurityGroup {
	for _, g := range s.st.groups {
		if g.ID == id {
			return g
		}
	}
	return nil
}

// zoneIDLocked returns the id of a zone: the configured one, else derived.
func (s *Service) zoneIDLocked(zone string) string {
	for _, z := range s.cfg.Zones {
		if z.Name == zone {
			return z.ID
		}
	}
	return zoneID(s.cfg.Region, zone)
}

// zonesLocked returns the zones instance types are offered in: the
// configured zones, then the zones of subnets, each once.
func (s *Service) zonesLocked() []Zone {
	out := slices.Clone(s.cfg.Zones)
	for _, sn := range s.st.subnets {
		if !slices.ContainsFunc(out, func(z Zone) bool { return z.Name == sn.Zone }) {
			out = append(out, Zone{Name: sn.Zone, ID: sn.ZoneID})
		}
	}
	return out
}

// subnetXML is one <item> of DescribeSubnets' subnetSet.
type subnetXML struct {
	SubnetID                string  `xml:"subnetId"`
	SubnetArn               string  `xml:"subnetArn"`
	State                   string  `xml:"state"`
	OwnerID                 string  `xml:"ownerId"`
	VpcID                   string  `xml:"vpcId"`
	CidrBlock               string  `xml:"cidrBlock"`
	AvailableIPAddressCount int     `xml:"availableIpAddressCount"`
	AvailabilityZone        string  `xml:"availabilityZone"`
	AvailabilityZoneID      string  `xml:"availabilityZoneId"`
	DefaultForAz            bool    `xml:"defaultForAz"`
	MapPublicIPOnLaunch     bool    `xml:"mapPublicIpOnLaunch"`
	TagSet                  *tagSet `xml:"tagSet,omitempty"`
}

// describeSubnetsResponse is DescribeSubnets' result.
type describeSubnetsResponse struct {
	meta
	Subnets   []subnetXML `xml:"subnetSet>item"`
	NextToken string      `xml:"nextToken,omitempty"`
}

// subnetFilters are the DescribeSubnets filters modelled.
var subnetFilters = fieldFuncs[*subnet]{
	"subnet-id":                  func(s *subnet) []string { return one(s.ID) },
	"vpc-id":                     func(s *subnet) []string { return one(s.VPCID) },
	"availability-zone":          func(s *subnet) []string { return one(s.Zone) },
	"availability-zone-id":       func(s *subnet) []string { return one(s.ZoneID) },
	"cidr-block":                 func(s *subnet) []string { return one(s.CIDR) },
	"cidr":                       func(s *subnet) []string { return one(s.CIDR) },
	"state":                      func(*subnet) []string { return one("available") },
	"default-for-az":             func(*subnet) []string { return one("false") },
	"available-ip-address-count": func(s *subnet) []string { return one(itoa(int64(s.AvailableIPs))) },
}

// describeSubnets serves DescribeSubnets.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSubnets.html
func (s *Service) describeSubnets(p params) (response, error) {
	ids, err := p.strings("SubnetId")
	if err != nil {
		return nil, err
	}
	fs, err := parseFilters(p, subnetFilters, true)
	if err != nil {
		return nil, err
	}
	pr, err := s.page(p, "DescribeSubnets", 5, 1000)
	if err != nil {
		return nil, err
	}
	var found []*subnet
	for _, id := range ids {
		sn := s.subnetLocked(id)
		if sn == nil {
			return nil, apiErrorf(400, "InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
		}
		found = append(found, sn)
	}
	if len(ids) == 0 {
		found = s.st.subnets
	}
	var sel []*subnet
	for _, sn := range found {
		if matches(sn, fs, subnetFilters, sn.Tags) {
			sel = append(sel, sn)
		}
	}
	start, end, next := s.window(pr, "DescribeSubnets", len(sel))
	out := &describeSubnetsResponse{NextToken: next, Subnets: []subnetXML{}}
	for _, sn := range sel[start:end] {
		out.Subnets = append(out.Subnets, subnetXML{
			SubnetID:                sn.ID,
			SubnetArn:               fmt.Sprintf("arn:aws:ec2:%s:%s:subnet/%s", s.cfg.Region, s.cfg.AccountID, sn.ID),
			State:                   "available",
			OwnerID:                 s.cfg.AccountID,
			VpcID:                   sn.VPCID,
			CidrBlock:               sn.CIDR,
			AvailableIPAddressCount: sn.AvailableIPs,
			AvailabilityZone:        sn.Zone,
			AvailabilityZoneID:      sn.ZoneID,
			TagSet:                  toTagSet(sn.Tags),
		})
	}
	return out, nil
}

// securityGroupXML is one <item> of DescribeSecurityGroups' securityGroupInfo.
type securityGroupXML struct {
	OwnerID          string  `xml:"ownerId"`
	GroupID          string  `xml:"groupId"`
	GroupName        string  `xml:"groupName"`
	GroupDescription string  `xml:"groupDescription"`
	VpcID            string  `xml:"vpcId"`
	SecurityGroupArn string  `xml:"securityGroupArn"`
	TagSet           *tagSet `xml:"tagSet,omitempty"`
}

// describeSecurityGroupsResponse is DescribeSecurityGroups' result.
type describeSecurityGroupsResponse struct {
	meta
	Groups    []securityGroupXML `xml:"securityGroupInfo>item"`
	NextToken string             `xml:"nextToken,omitempty"`
}

// groupFilters are the DescribeSecurityGroups filters modelled.
var groupFilters = fieldFuncs[*SecurityGroup]{
	"group-id":    func(g *SecurityGroup) []string { return one(g.ID) },
	"group-name":  func(g *SecurityGroup) []string { return one(g.Name) },
	"description": func(g *SecurityGroup) []string { return one(g.Description) },
	"vpc-id":      func(g *SecurityGroup) []string { return one(g.VPCID) },
}

// describeSecurityGroups serves DescribeSecurityGroups.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSecurityGroups.html
func (s *Service) describeSecurityGroups(p params) (response, error) {
	ids, err := p.strings("GroupId")
	if err != nil {
		return nil, err
	}
	names, err := p.strings("GroupName")
	if err != nil {
		return nil, err
	}
	fields := fieldFuncs[*SecurityGroup]{}
	for k, f := range groupFilters {
		fields[k] = f
	}
	fields["owner-id"] = func(*SecurityGroup) []string { return one(s.cfg.AccountID) }
	fs, err := parseFilters(p, fields, true)
	if err != nil {
		return nil, err
	}
	pr, err := s.page(p, "DescribeSecurityGroups", 5, 1000)
	if err != nil {
		return nil, err
	}
	if pr.limit && (len(ids) > 0 || len(names) > 0) {
		return nil, apiErrorf(400, "InvalidParameterCombination", "The parameter groupIdSet cannot be used with the parameter maxResults")
	}
	found := s.st.groups
	if len(ids) > 0 || len(names) > 0 {
		found = nil
		for _, id := range ids {
			g := s.groupLocked(id)
			if g == nil {
				return nil, apiErrorf(400, "InvalidGroup.NotFound", "The security group '%s' does not exist", id)
			}
			found = append(found, g)
		}
		for _, name := range names {
			i := slices.IndexFunc(s.st.groups, func(g *SecurityGroup) bool { return g.Name == name })
			if i < 0 {
				return nil, apiErrorf(400, "InvalidGroup.NotFound", "The security group '%s' does not exist", name)
			}
			if !slices.Contains(found, s.st.groups[i]) {
				found = append(found, s.st.groups[i])
			}
		}
	}
	var sel []*SecurityGroup
	for _, g := range found {
		if matches(g, fs, fields, g.Tags) {
			sel = append(sel, g)
		}
	}
	start, end, next := s.window(pr, "DescribeSecurityGroups", len(sel))
	out := &describeSecurityGroupsResponse{NextToken: next, Groups: []securityGroupXML{}}
	for _, g := range sel[start:end] {
		out.Groups = append(out.Groups, securityGroupXML{
			OwnerID:          s.cfg.AccountID,
			GroupID:          g.ID,
			GroupName:        g.Name,
			GroupDescription: g.Description,
			VpcID:            g.VPCID,
			SecurityGroupArn: fmt.Sprintf("arn:aws:ec2:%s:%s:security-group/%s", s.cfg.Region, s.cfg.AccountID, g.ID),
			TagSet:           toTagSet(g.Tags),
		})
	}
	return out, nil
}
