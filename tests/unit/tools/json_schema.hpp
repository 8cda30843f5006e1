// SPDX-License-Identifier: MIT
// A validator for the subset of JSON Schema (2020-12) that the tools' schema
// files use: type (one or a list), required, properties,
// additionalProperties (false or a schema), items, enum, minimum and local
// $ref ("#/$defs/name"). Any other keyword is an error, so the schema cannot
// silently use something this does not check.
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace schema {

using nlohmann::json;

class Validator {
  public:
    explicit Validator(json root) : root_(std::move(root)) {}

    /// Problems found, one per line ("" when the document is valid).
    std::vector<std::string> validate(const json &doc) {
        errors_.clear();
        check(root_, doc, "$");
        return errors_;
    }

  private:
    json root_;
    std::vector<std::string> errors_;

    static bool has_type(const json &v, const std::string &t) {
        if (t == "null")
            return v.is_null();
        if (t == "boolean")
            return v.is_boolean();
        if (t == "integer")
            return v.is_number_integer();
        if (t == "number")
            return v.is_number();
        if (t == "string")
            return v.is_string();
        if (t == "array")
            return v.is_array();
        if (t == "object")
            return v.is_object();
        return false;
    }

    void report(const std::string &where, const std::string &what) {
        errors_.push_back(where + ": " + what);
    }

    void check(const json &s, const json &v, const std::string &where) {
        static const std::set<std::string> known = {
            "$schema", "$id",      "title",      "description",
            "type",    "required", "properties", "additionalProperties",
            "items",   "enum",     "minimum",    "$ref",
            "$defs"};
        for (const auto &[k, unused] : s.items())
            if (!known.count(k))
                report(where, "schema keyword " + k + " is not supported by this validator");
        if (s.contains("$ref")) {
            std::string ref = s["$ref"];
            const std::string prefix = "#/$defs/";
            if (ref.rfind(prefix, 0) != 0 || !root_["$defs"].contains(ref.substr(prefix.size()))) {
                report(where, "unresolvable $ref " + ref);
                return;
            }
            check(root_["$defs"][ref.substr(prefix.size())], v, where);
        }
        if (s.contains("type")) {
            std::vector<std::string> types;
            if (s["type"].is_array())
                types = s["type"].get<std::vector<std::string>>();
            else
                types.push_back(s["type"]);
            bool ok = false;
            for (const auto &t : types)
                ok = ok || has_type(v, t);
            if (!ok) {
                report(where,
                       "is " + std::string(v.type_name()) + ", schema wants " + s["type"].dump());
                return;
            }
        }
        if (s.contains("enum")) {
            bool ok = false;
            for (const auto &e : s["enum"])
                ok = ok || e == v;
            if (!ok)
                report(where, v.dump() + " is not one of " + s["enum"].dump());
        }
        if (s.contains("minimum") && v.is_number() && v.get<double>() < s["minimum"].get<double>())
            report(where, v.dump() + " is below the minimum " + s["minimum"].dump());
        if (v.is_object()) {
            if (s.contains("required"))
                for (const auto &r : s["required"])
                    if (!v.contains(r.get<std::string>()))
                        report(where, "missing required key " + r.get<std::string>());
            for (const auto &[k, item] : v.items()) {
                if (s.contains("properties") && s["properties"].contains(k)) {
                    check(s["properties"][k], item, where + "." + k);
                } else if (s.contains("additionalProperties")) {
                    const json &ap = s["additionalProperties"];
                    if (ap.is_boolean() && !ap.get<bool>())
                        report(where, "unexpected key " + k);
                    else if (ap.is_object())
                        check(ap, item, where + "." + k);
                }
            }
        }
        if (v.is_array() && s.contains("items"))
            for (size_t i = 0; i < v.size(); i++)
                check(s["items"], v[i], where + "[" + std::to_string(i) + "]");
    }
};

} // namespace schema
