#include "lab/inventory.h"

#include <yaml.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "core/error.h"

namespace edgeprobe::lab {
namespace {

// The parsed YAML as a small tree with line numbers (libyaml's document API resolves
// anchors and aliases, which Ansible inventories use for shared variables).
struct Node {
  enum Kind { kNull, kScalar, kMap, kList } kind = kNull;
  std::string text;
  int line = 0;  // 1-based
  std::vector<std::pair<Node, Node>> map;
  std::vector<Node> list;
};

Node convert(yaml_document_t& doc, yaml_node_t* n, int depth) {
  Node out;
  if (!n) return out;
  out.line = static_cast<int>(n->start_mark.line) + 1;
  if (depth > 64) return out;  // an alias cycle; deep enough for any inventory
  switch (n->type) {
    case YAML_SCALAR_NODE: {
      out.text.assign(reinterpret_cast<const char*>(n->data.scalar.value), n->data.scalar.length);
      const bool plain = n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
      out.kind =
          plain && (out.text.empty() || out.text == "~" || out.text == "null") ? Node::kNull : Node::kScalar;
      break;
    }
    case YAML_MAPPING_NODE:
      out.kind = Node::kMap;
      for (auto* p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; ++p)
        out.map.emplace_back(convert(doc, yaml_document_get_node(&doc, p->key), depth + 1),
                             convert(doc, yaml_document_get_node(&doc, p->value), depth + 1));
      break;
    case YAML_SEQUENCE_NODE:
      out.kind = Node::kList;
      for (auto* i = n->data.sequence.items.start; i < n->data.sequence.items.top; ++i)
        out.list.push_back(convert(doc, yaml_document_get_node(&doc, *i), depth + 1));
      break;
    default:
      break;
  }
  return out;
}

Node parse_yaml(const std::string& text, const std::string& path) {
  yaml_parser_t parser;
  yaml_document_t doc;
  if (!yaml_parser_initialize(&parser)) throw_environment("{}: cannot start the YAML parser", path);
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  if (!yaml_parser_load(&parser, &doc)) {
    const std::string problem = parser.problem ? parser.problem : "not valid YAML";
    const auto line = (parser.problem_mark.line ? parser.problem_mark.line : parser.context_mark.line) + 1;
    yaml_parser_delete(&parser);
    throw_bad_input("{}:{}: {}", path, line, problem);
  }
  Node root = convert(doc, yaml_document_get_root_node(&doc), 0);
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  return root;
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
    for (const auto& name : order_) inv_.devices.push_back(build(drafts_.at(name)));
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
    auto& members = inv_.groups[group];
    if (std::find(members.begin(), members.end(), device) == members.end()) members.push_back(device);
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
                                                 "tier"};
    for (const auto& [k, v] : d.vars)
      if (!kKnown.contains(k) && !k.starts_with("ansible_"))
        fail(v.second,
             "host '" + d.name + "': unknown variable '" + k +
                 "' (use transport, host, user, port, serial, workdir, arch, labels, soc, os, tier)");
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
      fail(line_of("workdir"),
           "host '" + d.name + "': workdir '" + dev.workdir + "' has shell quoting characters");
    dev.arch = scalar(d, "arch");
    if (dev.arch == "arm64") dev.arch = "aarch64";
    if (!dev.arch.empty() && dev.arch != "aarch64" && dev.arch != "x86_64")
      fail(line_of("arch"), "host '" + d.name + "': arch '" + dev.arch + "': use aarch64 or x86_64");
    for (const char* k : {"soc", "os", "tier"})
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
  std::ostringstream text;
  text << in.rdbuf();
  return parse_inventory(text.str(), path);
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
