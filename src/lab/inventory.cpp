#include "lab/inventory.h"

#include <fmt/format.h>
#include <yaml.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "core/error.h"
#include "core/text.h"

namespace edgeprobe::lab {
namespace {

// The parsed YAML as a small tree with line numbers (anchors and aliases resolved, as
// Ansible inventories use them for shared variables).
struct Node {
  enum Kind { kNull, kScalar, kMap, kList } kind = kNull;
  std::string text;
  int line = 0;  // 1-based
  struct Entry;  // a key and its value (std::pair of an incomplete type is refused by clang)
  std::vector<Entry> map;
  std::vector<Node> list;
};
struct Node::Entry {
  Node key, value;
};

// Bounds on what an inventory may make us build: nesting (a recursive reader's stack and
// a hostile file's "[[[[..."), and the expanded tree (aliases repeating aliases, the
// "billion laughs", expand exponentially from a few hundred bytes).
constexpr size_t kMaxInventoryBytes = 16 << 20;
constexpr size_t kMaxDepth = 64;
constexpr size_t kMaxExpandedBytes = 128 << 20;  // what the tree holds, aliases expanded
constexpr size_t kNodeCost = 64;                 // a node's own bytes, its text aside
constexpr size_t kMaxValueBytes = 1024;          // so that every message naming a value stays short

// A value for a message: one escaped line, bounded.
std::string shown(std::string_view text) { return edgeprobe::one_line(text, 80); }

// Builds the tree from libyaml's events rather than its document API: that API has no
// bound on nesting or on what aliases expand to, and expanding them is where the memory goes.
class TreeBuilder {
 public:
  explicit TreeBuilder(const std::string& path) : path_(path) {}

  [[noreturn]] void fail(const yaml_mark_t& mark, const std::string& problem) const {
    throw_bad_input("{}:{}: {}", path_, mark.line + 1, problem);
  }

  // Takes one event; true once the first document is complete.
  bool take(const yaml_event_t& ev) {
    switch (ev.type) {
      case YAML_SCALAR_EVENT: {
        Node n;
        n.line = static_cast<int>(ev.start_mark.line) + 1;
        n.text.assign(reinterpret_cast<const char*>(ev.data.scalar.value), ev.data.scalar.length);
        if (n.text.size() > kMaxValueBytes)
          fail(ev.start_mark, fmt::format("a value of {} bytes; inventory values are names and paths (at most {})",
                                          n.text.size(), kMaxValueBytes));
        if (const auto bad = first_control(n.text); bad != std::string::npos)
          fail(ev.start_mark, fmt::format("'{}' holds a control character; inventory values are names and paths",
                                          shown(n.text)));
        const bool plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        n.kind = plain && (n.text.empty() || n.text == "~" || n.text == "null") ? Node::kNull : Node::kScalar;
        const size_t cost = kNodeCost + n.text.size();
        charge(cost, ev.start_mark);
        place(std::move(n), cost, anchor_of(ev.data.scalar.anchor), ev.start_mark);
        return false;
      }
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT: {
        if (open_.size() >= kMaxDepth)
          fail(ev.start_mark, fmt::format("nested deeper than {} levels; an inventory needs a few", kMaxDepth));
        Open o;
        o.node.kind = ev.type == YAML_MAPPING_START_EVENT ? Node::kMap : Node::kList;
        o.node.line = static_cast<int>(ev.start_mark.line) + 1;
        o.anchor = anchor_of(ev.type == YAML_MAPPING_START_EVENT ? ev.data.mapping_start.anchor
                                                                  : ev.data.sequence_start.anchor);
        o.cost = kNodeCost;
        charge(kNodeCost, ev.start_mark);
        open_.push_back(std::move(o));
        return false;
      }
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: {
        Open o = std::move(open_.back());
        open_.pop_back();
        place(std::move(o.node), o.cost, o.anchor, ev.start_mark);
        return false;
      }
      case YAML_ALIAS_EVENT: {
        const std::string name = anchor_of(ev.data.alias.anchor);
        auto it = anchors_.find(name);
        if (it == anchors_.end()) fail(ev.start_mark, fmt::format("alias '*{}' names no anchor", shown(name)));
        charge(it->second.second, ev.start_mark);
        place(Node(it->second.first), it->second.second, "", ev.start_mark);
        return false;
      }
      case YAML_DOCUMENT_END_EVENT:
      case YAML_STREAM_END_EVENT:
        return true;
      default:
        return false;
    }
  }

  Node root() { return std::move(root_); }

 private:
  struct Open {
    Node node;
    std::string anchor;
    size_t cost = 0;  // bytes of this node and everything in it
    bool have_key = false;
    Node key;
    std::unordered_map<std::string, int> keys;  // a map's keys so far, with their lines
  };

  static std::string anchor_of(const yaml_char_t* anchor) {
    return anchor ? reinterpret_cast<const char*>(anchor) : "";
  }

  // C0 controls, DEL and UTF-8's C1 controls: nothing a name or a path needs.
  static size_t first_control(const std::string& s) {
    for (size_t i = 0; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c < 0x20 || c == 0x7f) return i;
      if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9f &&
          static_cast<unsigned char>(s[i + 1]) >= 0x80)
        return i;
    }
    return std::string::npos;
  }

  void charge(size_t cost, const yaml_mark_t& mark) {
    expanded_ += cost;
    if (expanded_ > kMaxExpandedBytes)
      fail(mark, fmt::format("the inventory expands to over {} MiB (aliases of aliases?); refused",
                             kMaxExpandedBytes >> 20));
  }

  void place(Node n, size_t cost, const std::string& anchor, const yaml_mark_t& mark) {
    if (!anchor.empty()) {
      charge(cost, mark);  // the anchor's copy is held too
      anchors_[anchor] = {n, cost};
    }
    if (open_.empty()) {
      root_ = std::move(n);
      return;
    }
    Open& parent = open_.back();
    parent.cost += cost;
    if (parent.node.kind == Node::kList) {
      parent.node.list.push_back(std::move(n));
    } else if (!parent.have_key) {
      parent.key = std::move(n);
      parent.have_key = true;
    } else {
      parent.have_key = false;
      if (parent.key.kind != Node::kMap && parent.key.kind != Node::kList) {
        const auto [it, fresh] = parent.keys.try_emplace(parent.key.text, parent.key.line);
        if (!fresh)
          throw_bad_input("{}:{}: '{}' appears twice in one map (first at line {}); name each once", path_,
                          parent.key.line, shown(parent.key.text), it->second);
      }
      parent.node.map.push_back({std::move(parent.key), std::move(n)});
      parent.key = Node();
    }
  }

  const std::string& path_;
  std::vector<Open> open_;
  std::map<std::string, std::pair<Node, size_t>> anchors_;
  Node root_;
  size_t expanded_ = 0;
};

Node parse_yaml(const std::string& text, const std::string& path) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) throw_environment("{}: cannot start the YAML parser", path);
  std::unique_ptr<yaml_parser_t, void (*)(yaml_parser_t*)> owner(&parser, yaml_parser_delete);
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  TreeBuilder builder(path);
  for (bool done = false; !done;) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&parser, &ev)) {
      const std::string problem = parser.problem ? parser.problem : "not valid YAML";
      const auto line = (parser.problem_mark.line ? parser.problem_mark.line : parser.context_mark.line) + 1;
      throw_bad_input("{}:{}: {}", path, line, shown(problem));
    }
    std::unique_ptr<yaml_event_t, void (*)(yaml_event_t*)> event(&ev, yaml_event_delete);
    done = builder.take(ev);
  }
  return builder.root();
}

// A local device's default workdir: ${XDG_CACHE_HOME:-$HOME/.cache}/edgeprobe/lab/NAME.
std::string local_workdir(const std::string& name) {
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string base = cache && *cache ? cache : std::string(home && *home ? home : "/tmp") + "/.cache";
  return base + "/edgeprobe/lab/" + name;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

using Vars = std::map<std::string, std::pair<const Node*, int>>;  // name -> value, line

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(int line, const std::string& problem) const {
    throw_bad_input("{}:{}: {}", path_, line, problem);
  }

  void group(const std::string& name, const Node& body, const Vars& inherited,
             std::vector<std::string> chain) {
    if (std::find(chain.begin(), chain.end(), name) != chain.end())
      fail(body.line, "group '" + name + "' contains itself");
    chain.push_back(name);
    inv_.groups[name];  // an empty group is still a group
    if (body.kind == Node::kNull) return;
    if (body.kind != Node::kMap)
      fail(body.line, "group '" + name + "' must be a map with hosts, vars or children");
    Vars vars = inherited;
    for (const auto& [k, v] : body.map)
      if (k.text == "vars") add_vars(v, vars, "vars of group '" + name + "'");
    for (const auto& [k, v] : body.map) {
      if (k.text == "vars") continue;
      if (k.text == "hosts") {
        if (v.kind == Node::kNull) continue;
        if (v.kind != Node::kMap) fail(v.line, "hosts of group '" + name + "' must be a map of host names");
        for (const auto& [hk, hv] : v.map) host(hk, hv, vars, chain);
      } else if (k.text == "children") {
        if (v.kind == Node::kNull) continue;
        if (v.kind != Node::kMap)
          fail(v.line, "children of group '" + name + "' must be a map of group names");
        for (const auto& [ck, cv] : v.map) {
          group(ck.text, cv, vars, chain);
          for (const auto& d : inv_.groups[ck.text]) add_member(name, d);
        }
      } else {
        fail(k.line, "unknown key '" + k.text + "' in group '" + name + "' (use hosts, vars, children)");
      }
    }
  }

  Inventory finish() {
    // Two entries for one device would run two jobs on it at once, each disturbing the other.
    std::map<std::string, const Draft*> addresses;
    for (const auto& name : order_) {
      const Draft& d = drafts_.at(name);
      inv_.devices.push_back(build(d));
      const Device& dev = inv_.devices.back();
      const std::string address = dev.transport == "ssh"   ? "ssh " + dev.host + (dev.port ? fmt::format(":{}", dev.port) : "")
                                  : dev.transport == "adb" ? "adb " + dev.serial
                                                           : "";
      if (address.empty()) continue;
      if (const auto [it, fresh] = addresses.try_emplace(address, &d); !fresh)
        fail(d.line, fmt::format("host '{}' is the device of host '{}' (line {}) again ({}); list each device once",
                                 d.name, it->second->name, it->second->line, address));
    }
    return std::move(inv_);
  }

  void set_path() { inv_.path = path_; }

 private:
  struct Draft {
    std::string name;
    int line = 0;
    Vars vars;
    std::vector<std::string> groups;
  };

  void add_member(const std::string& group, const std::string& device) {
    if (membership_.emplace(group, device).second) inv_.groups[group].push_back(device);
  }

  void add_vars(const Node& v, Vars& vars, const std::string& where) {
    if (v.kind == Node::kNull) return;
    if (v.kind != Node::kMap) fail(v.line, where + " must be a map");
    for (const auto& [k, val] : v.map) vars[k.text] = {&val, k.line};
  }

  void host(const Node& key, const Node& body, const Vars& group_vars,
            const std::vector<std::string>& chain) {
    if (key.kind != Node::kScalar || key.text.empty()) fail(key.line, "a host needs a name");
    const std::string& name = key.text;
    auto [it, fresh] = drafts_.try_emplace(name);
    Draft& d = it->second;
    if (fresh) {
      d.name = name;
      d.line = key.line;
      order_.push_back(name);
    }
    // Group variables fill in what the host (or a more specific group) did not set.
    Vars own;
    add_vars(body, own, "variables of host '" + name + "'");
    for (const auto& [k, v] : own) d.vars[k] = v;
    for (const auto& [k, v] : group_vars) d.vars.try_emplace(k, v);
    for (const auto& g : chain) {
      if (std::find(d.groups.begin(), d.groups.end(), g) == d.groups.end()) d.groups.push_back(g);
      add_member(g, name);
    }
  }

  std::string scalar(const Draft& d, const std::string& key) const {
    auto it = d.vars.find(key);
    if (it == d.vars.end() || it->second.first->kind == Node::kNull) return "";
    if (it->second.first->kind != Node::kScalar)
      fail(it->second.second, "host '" + d.name + "': '" + key + "' must be a single value");
    return it->second.first->text;
  }

  Device build(const Draft& d) const {
    static const std::set<std::string> kKnown = {"transport", "ansible_connection",
                                                 "host",      "ansible_host",
                                                 "user",      "ansible_user",
                                                 "port",      "ansible_port",
                                                 "serial",    "workdir",
                                                 "arch",      "labels",
                                                 "soc",       "os",
                                                 "tier",      "lava_device_type",
                                                 "lava_tags"};
    for (const auto& [k, v] : d.vars)
      if (!kKnown.contains(k) && !k.starts_with("ansible_"))
        fail(v.second,
             "host '" + d.name + "': unknown variable '" + k +
                 "' (use transport, host, user, port, serial, workdir, arch, labels, soc, os, tier, lava_device_type, "
                 "lava_tags)");
    Device dev;
    dev.name = d.name;
    dev.origin = path_ + ":" + std::to_string(d.line);
    dev.groups = d.groups;
    auto line_of = [&](const std::string& k) { return d.vars.contains(k) ? d.vars.at(k).second : d.line; };
    dev.transport = scalar(d, "transport");
    if (dev.transport.empty()) dev.transport = scalar(d, "ansible_connection");
    if (dev.transport.empty()) dev.transport = "ssh";  // Ansible's default connection
    if (dev.transport != "local" && dev.transport != "ssh" && dev.transport != "adb")
      fail(line_of(d.vars.contains("transport") ? "transport" : "ansible_connection"),
           "host '" + d.name + "': transport '" + dev.transport + "': use local, ssh or adb");
    dev.host = scalar(d, "host");
    if (dev.host.empty()) dev.host = scalar(d, "ansible_host");
    if (dev.transport == "ssh" && dev.host.empty()) dev.host = d.name;  // the name as an ssh alias
    dev.user = scalar(d, "user");
    if (dev.user.empty()) dev.user = scalar(d, "ansible_user");
    const std::string port_key = d.vars.contains("port") ? "port" : "ansible_port";
    if (const std::string port = scalar(d, port_key); !port.empty()) {
      char* end = nullptr;
      const long p = std::strtol(port.c_str(), &end, 10);
      if (*end != '\0' || p < 1 || p > 65535)
        fail(line_of(port_key), "host '" + d.name + "': port '" + port + "': use 1..65535");
      dev.port = static_cast<int>(p);
    }
    dev.serial = scalar(d, "serial");
    if (dev.transport == "adb" && dev.serial.empty())
      fail(d.line, "host '" + d.name + "': an adb device needs a serial (from 'adb devices', or host:port)");
    dev.workdir = scalar(d, "workdir");
    if (dev.workdir.empty()) {
      if (dev.transport == "adb")
        dev.workdir = "/data/local/tmp/edgeprobe";
      else if (dev.transport == "ssh")
        dev.workdir = "edgeprobe-lab";  // under the login's home
      else
        dev.workdir = local_workdir(d.name);
    }
    if (dev.workdir.find_first_of("'\"\\`$\n") != std::string::npos)
      fail(line_of("workdir"), "host '" + d.name + "': workdir '" + dev.workdir + "' has shell quoting characters" +
                                   (d.vars.contains("workdir") ? "" : " (it comes from the name: set workdir)"));
    // Nothing from an inventory may reach ssh, scp or adb as an option, or a path as "..".
    if (d.name.starts_with('-') || d.name.find('/') != std::string::npos || d.name == "." || d.name == "..")
      fail(d.line, "host '" + d.name + "': a name cannot begin with '-', hold '/' or be '.' or '..'");
    for (const auto& [key, value] : {std::pair<const char*, const std::string*>{"host", &dev.host},
                                     {"user", &dev.user},
                                     {"serial", &dev.serial},
                                     {"workdir", &dev.workdir}})
      if (value->starts_with('-'))
        fail(line_of(d.vars.contains(key) ? key : std::string("ansible_") + key),
             "host '" + d.name + "': " + key + " '" + *value +
                 "' begins with '-' (a command would read it as an option); refused");
    dev.arch = scalar(d, "arch");
    if (dev.arch == "arm64") dev.arch = "aarch64";
    if (!dev.arch.empty() && dev.arch != "aarch64" && dev.arch != "x86_64")
      fail(line_of("arch"), "host '" + d.name + "': arch '" + dev.arch + "': use aarch64 or x86_64");
    // lava_*: how a LAVA server knows the device (lab submit --engine lava), kept as labels.
    for (const char* k : {"soc", "os", "tier", "lava_device_type", "lava_tags"})
      if (const std::string v = scalar(d, k); !v.empty()) dev.labels[k] = v;
    if (auto it = d.vars.find("labels"); it != d.vars.end() && it->second.first->kind != Node::kNull) {
      const Node& labels = *it->second.first;
      if (labels.kind != Node::kMap) fail(it->second.second, "host '" + d.name + "': labels must be a map");
      for (const auto& [k, v] : labels.map) {
        if (v.kind == Node::kMap || v.kind == Node::kList)
          fail(k.line, "host '" + d.name + "': label '" + k.text + "' must be a single value");
        dev.labels[k.text] = v.text;
      }
    }
    return dev;
  }

  std::string path_;
  Inventory inv_;
  std::map<std::string, Draft> drafts_;
  std::vector<std::string> order_;
  std::set<std::pair<std::string, std::string>> membership_;  // (group, device), for add_member
};

}  // namespace

const Device& Inventory::device(const std::string& name) const {
  for (const auto& d : devices)
    if (d.name == name) return d;
  throw_bad_input("{}: no device '{}'", path, name);
}

Inventory parse_inventory(const std::string& text, const std::string& path) {
  const Node root = parse_yaml(text, path);
  if (root.kind == Node::kNull)
    throw_bad_input("{}:1: the inventory is empty (expected groups such as 'all:')", path);
  if (root.kind != Node::kMap)
    throw_bad_input("{}:{}: the inventory must be a map of groups (such as 'all:')", path, root.line);
  Reader reader(path);
  reader.set_path();
  for (const auto& [k, v] : root.map) reader.group(k.text, v, {}, {});
  Inventory inv = reader.finish();
  if (inv.devices.empty()) throw_bad_input("{}:{}: the inventory has no hosts", path, root.line);
  return inv;
}

Inventory load_inventory(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_bad_input("{}: cannot read the inventory", path);
  // Read at most one byte past the bound: a file that never ends (/dev/zero) costs no more.
  std::string text(kMaxInventoryBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxInventoryBytes)
    throw_bad_input("{}: the inventory is over {} MiB; refused", path, kMaxInventoryBytes >> 20);
  return parse_inventory(text, path);
}

std::vector<Device> select_devices(const Inventory& inv, const std::string& devices,
                                   const std::string& groups) {
  std::set<std::string> wanted;
  for (const auto& name : split_list(devices)) wanted.insert(inv.device(name).name);
  for (const auto& g : split_list(groups)) {
    auto it = inv.groups.find(g);
    if (it == inv.groups.end()) throw_bad_input("{}: no group '{}'", inv.path, g);
    wanted.insert(it->second.begin(), it->second.end());
  }
  std::vector<Device> out;
  for (const auto& d : inv.devices)
    if ((devices.empty() && groups.empty()) || wanted.contains(d.name)) out.push_back(d);
  if (out.empty()) throw_bad_input("{}: the selection names no device", inv.path);
  return out;
}

nlohmann::json to_json(const Device& d) {
  return {{"name", d.name},     {"transport", d.transport}, {"host", d.host},       {"user", d.user},
          {"port", d.port},     {"serial", d.serial},       {"workdir", d.workdir}, {"arch", d.arch},
          {"labels", d.labels}, {"groups", d.groups},       {"origin", d.origin}};
}

Device device_from_json(const nlohmann::json& j) {
  Device d;
  d.name = j.at("name");
  d.transport = j.at("transport");
  d.host = j.value("host", "");
  d.user = j.value("user", "");
  d.port = j.value("port", 0);
  d.serial = j.value("serial", "");
  d.workdir = j.value("workdir", "");
  d.arch = j.value("arch", "");
  d.labels = j.value("labels", std::map<std::string, std::string>{});
  d.groups = j.value("groups", std::vector<std::string>{});
  d.origin = j.value("origin", "");
  return d;
}

}  // namespace edgeprobe::lab
