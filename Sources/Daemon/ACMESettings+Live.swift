/// Which `acme:` changes the running certificate manager takes without being replaced.
extension ACMESettings {
    /// Whether `self` differs from `old` in `orders-per-hour` alone, which the running manager
    /// takes live (`CertificateManager.setOrdersPerHour`): replacing it would forget every name's
    /// back-off and the sites' turns, and could order a name twice while an order is in flight.
    package func differsOnlyInBudget(from old: ACMESettings) -> Bool {
        var same = old
        same.ordersPerHour = ordersPerHour
        return same == self && old.ordersPerHour != ordersPerHour
    }
}
