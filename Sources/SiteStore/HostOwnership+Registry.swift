/// What the tenant API reads of the registry's ownership (Sources/TenantAPI): a copy to check a
/// new version of a site against, exactly as a reload would decide it, and `validate`'s wording
/// of a refused name.
extension SiteRegistry {
    /// Which site holds which host as of the last reload: a value, copied in O(1) (its
    /// collections are copied on write), so that a check can change its copy off the reloader.
    public var hostOwnership: HostOwnership { claims.ownership }
}

extension HostOwnership.Refusal {
    /// The problem `aasad validate` reports for this refusal on `site` (`HostClaims.problem`).
    public func problem(site: String) -> ConfigProblem { HostClaims.problem(self, site: site) }
}
