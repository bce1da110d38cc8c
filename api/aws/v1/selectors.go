package v1

// SubnetSelectorTerm selects subnets by tags or by id. Terms are ORed; the
// fields inside one term are ANDed.
//
// +kubebuilder:validation:XValidation:message="expected at least one, got none, ['tags', 'id']",rule="has(self.tags) || has(self.id)"
// +kubebuilder:validation:XValidation:message="'id' is mutually exclusive, cannot be set with a combination of other fields in a subnet selector term",rule="!(has(self.id) && has(self.tags))"
type SubnetSelectorTerm struct {
	// tags the subnet must carry; the value "*" matches any value.
	// +kubebuilder:validation:XValidation:message="empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +kubebuilder:validation:MaxProperties:=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// id of the subnet.
	// +kubebuilder:validation:Pattern="subnet-[0-9a-z]+"
	// +optional
	ID string `json:"id,omitempty"`
}

// SecurityGroupSelectorTerm selects security groups by tags, id or name.
//
// +kubebuilder:validation:XValidation:message="expected at least one, got none, ['tags', 'id', 'name']",rule="has(self.tags) || has(self.id) || has(self.name)"
// +kubebuilder:validation:XValidation:message="'id' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term",rule="!(has(self.id) && (has(self.tags) || has(self.name)))"
// +kubebuilder:validation:XValidation:message="'name' is mutually exclusive, cannot be set with a combination of other fields in a security group selector term",rule="!(has(self.name) && (has(self.tags) || has(self.id)))"
type SecurityGroupSelectorTerm struct {
	// tags the security group must carry; the value "*" matches any value.
	// +kubebuilder:validation:XValidation:message="empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +kubebuilder:validation:MaxProperties:=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// id of the security group.
	// +kubebuilder:validation:Pattern:="sg-[0-9a-z]+"
	// +optional
	ID string `json:"id,omitempty"`
	// name of the security group (its GroupName, not the Name tag).
	// +optional
	Name string `json:"name,omitempty"`
}

// CapacityReservationSelectorTerm selects EC2 capacity reservations.
//
// +kubebuilder:validation:XValidation:message="expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']",rule="has(self.tags) || has(self.id) || has(self.instanceMatchCriteria)"
// +kubebuilder:validation:XValidation:message="'id' is mutually exclusive, cannot be set along with tags in a capacity reservation selector term",rule="!(has(self.id) && has(self.tags))"
type CapacityReservationSelectorTerm struct {
	// tags the reservation must carry.
	// +kubebuilder:validation:XValidation:message="empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +kubebuilder:validation:MaxProperties:=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// id of the reservation.
	// +kubebuilder:validation:Pattern="^cr-[0-9a-z]+$"
	// +optional
	ID string `json:"id,omitempty"`
	// ownerID is the account that owns the reservation.
	// +kubebuilder:validation:Pattern="^[0-9]{12}$"
	// +optional
	OwnerID string `json:"ownerID,omitempty"`
	// instanceMatchCriteria selects open or targeted reservations.
	// +kubebuilder:validation:Enum:={open,targeted}
	// +optional
	InstanceMatchCriteria string `json:"instanceMatchCriteria,omitempty"`
}

// AMISelectorTerm selects AMIs: by alias (family@version, resolved from the
// public SSM parameters), by id, by name/owner, by tags or by an SSM parameter.
//
// +kubebuilder:validation:XValidation:message="expected at least one, got none, ['tags', 'id', 'name', 'alias', 'ssmParameter']",rule="has(self.tags) || has(self.id) || has(self.name) || has(self.alias) || has(self.ssmParameter)"
// +kubebuilder:validation:XValidation:message="'id' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms",rule="!(has(self.id) && (has(self.alias) || has(self.tags) || has(self.name) || has(self.owner) || has(self.ssmParameter)))"
// +kubebuilder:validation:XValidation:message="'alias' is mutually exclusive, cannot be set with a combination of other fields in amiSelectorTerms",rule="!(has(self.alias) && (has(self.id) || has(self.tags) || has(self.name) || has(self.owner) || has(self.ssmParameter)))"
type AMISelectorTerm struct {
	// alias is family@version, for example al2023@latest or bottlerocket@v1.20.3.
	// Known families: al2, al2023, bottlerocket, windows2019, windows2022, windows2025.
	// +kubebuilder:validation:XValidation:message="'alias' is improperly formatted, must match the format 'family@version'",rule="self.matches('^[a-zA-Z0-9]+@.+$')"
	// +kubebuilder:validation:XValidation:message="family is not supported, must be one of the following: 'al2', 'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'",rule="self.find('^[^@]+') in ['al2','al2023','bottlerocket','windows2019','windows2022','windows2025']"
	// +kubebuilder:validation:XValidation:message="windows families may only specify version 'latest'",rule="self.find('^[^@]+') in ['windows2019','windows2022','windows2025'] ? self.find('[^@]+$') == 'latest' : true"
	// +kubebuilder:validation:MaxLength=30
	// +optional
	Alias string `json:"alias,omitempty"`
	// tags the AMI must carry.
	// +kubebuilder:validation:XValidation:message="empty tag keys or values aren't supported",rule="self.all(k, k != '' && self[k] != '')"
	// +kubebuilder:validation:MaxProperties:=20
	// +optional
	Tags map[string]string `json:"tags,omitempty"`
	// id of the AMI.
	// +kubebuilder:validation:Pattern="ami-[0-9a-z]+"
	// +optional
	ID string `json:"id,omitempty"`
	// name of the AMI; EC2 wildcards are allowed.
	// +optional
	Name string `json:"name,omitempty"`
	// owner account id or alias (self, amazon) of the AMI.
	// +optional
	Owner string `json:"owner,omitempty"`
	// ssmParameter names an SSM parameter whose value is an AMI id.
	// +optional
	SSMParameter string `json:"ssmParameter,omitempty"`
}
