#include "tokenizer/post_processor.h"

namespace ls::tok {

PostProcessor PostProcessor::from_json(const Json& j, const Where& w) {
  PostProcessor p;
  if (!j.is_null()) p.add(j, w);
  return p;
}

void PostProcessor::add(const Json& j, const Where& w) {
  std::string type = type_of(j, w);
  if (type == "Sequence") {
    const Json& list = member(j, "processors", w);
    if (!list.is_array()) w.at("processors").fail("expected an array");
    for (size_t i = 0; i < list.size(); ++i) add(list[i], w.at("processors").at(i));
  } else if (type == "ByteLevel") {
    // Adjusts offsets only.
  } else if (type == "TemplateProcessing") {
    const Json& specials = member(j, "special_tokens", w);
    const Json& single = member(j, "single", w);
    if (!single.is_array()) w.at("single").fail("expected an array");
    Template t;
    bool seen_sequence = false;
    for (size_t i = 0; i < single.size(); ++i) {
      Where wi = w.at("single").at(i);
      const Json& piece = single[i];
      if (const Json* s = piece.is_object() ? optional_member(piece, "SpecialToken", wi) : nullptr) {
        std::string name = string_member(*s, "id", wi.at("SpecialToken"));
        const Json* special = optional_member(specials, name.c_str(), w.at("special_tokens"));
        if (!special) wi.fail("special token \"" + name + "\" is not in \"special_tokens\"");
        const Json& ids = member(*special, "ids", w.at("special_tokens").at(name));
        if (!ids.is_array()) w.at("special_tokens").at(name).fail("\"ids\" must be an array");
        for (const Json& id : ids) {
          if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
            w.at("special_tokens").at(name).fail("\"ids\" must hold token ids");
          }
          (seen_sequence ? t.after : t.before).push_back(int32_t(id.get<int64_t>()));
        }
      } else if (piece.is_object() && piece.contains("Sequence")) {
        seen_sequence = true;
      } else {
        wi.fail("expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
      }
    }
    steps_.push_back(std::move(t));
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    auto token_id = [&](const char* key) {
      const Json& pair = member(j, key, w);  // ["[CLS]", 101]
      if (!pair.is_array() || pair.size() != 2 || !pair[1].is_number_integer() || pair[1].get<int64_t>() < 0 ||
          pair[1].get<int64_t>() > INT32_MAX) {
        w.at(key).fail("expected [token, id]");
      }
      return int32_t(pair[1].get<int64_t>());
    };
    steps_.push_back({{token_id("cls")}, {token_id("sep")}});
  } else {
    w.fail("unsupported post_processor type \"" + type + "\"");
  }
}

std::vector<int32_t> PostProcessor::apply(std::vector<int32_t> ids) const {
  for (const Template& t : steps_) {
    if (t.before.empty() && t.after.empty()) continue;
    std::vector<int32_t> out;
    out.reserve(t.before.size() + ids.size() + t.after.size());
    out.insert(out.end(), t.before.begin(), t.before.end());
    out.insert(out.end(), ids.begin(), ids.end());
    out.insert(out.end(), t.after.begin(), t.after.end());
    ids = std::move(out);
  }
  return ids;
}

}  // namespace ls::tok
