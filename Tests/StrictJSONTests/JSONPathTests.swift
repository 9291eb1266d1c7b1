import Testing

@testable import StrictJSON

/// A path built step by step is the same value as the one made from its components: equal,
/// hashed alike, and written the same way; paths that differ anywhere are not equal.
@Suite struct JSONPathTests {
    @Test func appendedAndListedPathsAreOneValue() {
        let listed = JSONPath([.key("applinks"), .key("details"), .index(2), .key("/")])
        let appended = JSONPath.root.appending("applinks").appending("details").appending(2).appending("/")
        #expect(listed == appended)
        #expect(listed.hashValue == appended.hashValue)
        #expect(appended.components == listed.components)
        #expect(appended.description == #"applinks.details[2]["/"]"#)
        #expect(JSONPath.root.description == "(top level)" && JSONPath.root == JSONPath([]))
    }

    @Test func pathsThatDifferAnywhereAreNotEqual() {
        let base = JSONPath.root.appending("applinks").appending("details")
        let shared = base.appending(0)
        let cases: [JSONPath] = [
            base, base.appending(1), base.appending("0"), JSONPath.root.appending("applink").appending("details").appending(0),
            JSONPath.root.appending("details").appending(0), shared.appending("x"), JSONPath.root,
        ]
        for other in cases {
            #expect(shared != other, "\(other)")
            #expect(Set([shared, other]).count == 2)
        }
        // Two branches from one prefix keep their own last steps.
        let left = base.appending("left")
        let right = base.appending("right")
        #expect(left.description == "applinks.details.left" && right.description == "applinks.details.right")
        #expect(base.description == "applinks.details")
    }
}
