/// Where a value sits in a JSON document, written the way users read it:
/// `applinks.details[2].components[0]["/"]`. The empty path is the top level.
public struct JSONPath: Sendable, Hashable, CustomStringConvertible {
    public enum Component: Sendable, Hashable {
        case key(String)
        case index(Int)
    }

    /// The last component, linked to the path before it: a validator hands every value it
    /// descends into a path of its own, for the diagnostics it may make, and almost always makes
    /// none. Appending is one small allocation that shares the whole prefix (an array of
    /// components copied its prefix and allocated twice per step: a tenth of a first start's
    /// CPU at 100,000 sites, docs/benchmarks.md).
    private final class Node: Sendable {
        let parent: Node?
        let component: Component
        let depth: Int

        init(parent: Node?, component: Component) {
            self.parent = parent
            self.component = component
            depth = (parent?.depth ?? 0) + 1
        }
    }

    private let last: Node?

    private init(last: Node?) { self.last = last }

    public init(_ components: [Component] = []) {
        var node: Node? = nil
        for component in components { node = Node(parent: node, component: component) }
        last = node
    }

    /// From the top level down.
    public var components: [Component] {
        var out: [Component] = []
        out.reserveCapacity(last?.depth ?? 0)
        var node = last
        while let current = node {
            out.append(current.component)
            node = current.parent
        }
        out.reverse()
        return out
    }

    public static let root = JSONPath()

    public func appending(_ key: String) -> JSONPath {
        JSONPath(last: Node(parent: last, component: .key(key)))
    }

    public func appending(_ index: Int) -> JSONPath {
        JSONPath(last: Node(parent: last, component: .index(index)))
    }

    public static func == (a: JSONPath, b: JSONPath) -> Bool {
        var x = a.last
        var y = b.last
        while let left = x, let right = y {
            if left === right { return true }
            guard left.depth == right.depth, left.component == right.component else { return false }
            x = left.parent
            y = right.parent
        }
        return x == nil && y == nil
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(last?.depth ?? 0)
        var node = last
        while let current = node {
            hasher.combine(current.component)
            node = current.parent
        }
    }

    public var description: String {
        if components.isEmpty { return "(top level)" }
        var out = ""
        for component in components {
            switch component {
            case .index(let i):
                out += "[\(i)]"
            case .key(let k):
                if Self.isIdentifier(k) {
                    if !out.isEmpty { out += "." }
                    out += k
                } else {
                    out += "[\(JSONValue.quote(k))]"
                }
            }
        }
        return out
    }

    private static func isIdentifier(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first, first.isASCIILetterOrUnderscore else { return false }
        return s.unicodeScalars.allSatisfy { $0.isASCIILetterOrUnderscore || ("0"..."9").contains($0) }
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetterOrUnderscore: Bool {
        ("a"..."z").contains(self) || ("A"..."Z").contains(self) || self == "_"
    }
}
