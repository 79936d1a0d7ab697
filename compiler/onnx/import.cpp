#include "onnx/import.hpp"

#include "onnx/onnx_ops.hpp"
#include "onnx/onnx_tensor.hpp"
#include "stof/error.hpp"
#include "stof/progress.hpp"
#include "stof/regular_file.hpp"

#include <google/protobuf/io/coded_stream.h>

#include <filesystem>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace stof {

namespace {

ir::AttrValue attr_from_onnx(const onnx::AttributeProto& a, const std::string& node_label, const std::string& base_dir) {
    switch (a.type()) {
        case onnx::AttributeProto::INT: return static_cast<int64_t>(a.i());
        case onnx::AttributeProto::FLOAT: return static_cast<double>(a.f());
        case onnx::AttributeProto::STRING: return a.s();
        case onnx::AttributeProto::INTS: return std::vector<int64_t>(a.ints().begin(), a.ints().end());
        case onnx::AttributeProto::FLOATS: return std::vector<double>(a.floats().begin(), a.floats().end());
        case onnx::AttributeProto::STRINGS: return std::vector<std::string>(a.strings().begin(), a.strings().end());
        case onnx::AttributeProto::TENSOR: return tensor_from_onnx(a.t(), base_dir);
        default: break;
    }
    STOF_FAIL("{}: attribute '{}' has a type stofc does not support ({})", node_label, a.name(), static_cast<int>(a.type()));
}

// Nodes in an order where every value is produced before it is read: the model's order
// where it allows (the smallest-index ready node first), O(n log n) in the nodes and edges.
std::vector<const onnx::NodeProto*> topological_nodes(const onnx::GraphProto& g, const std::unordered_set<std::string>& ready0) {
    std::unordered_set<std::string> ready = ready0;
    const int n = g.node_size();
    std::vector<int> missing(static_cast<size_t>(n), 0);                  // per node: distinct inputs not yet ready
    std::unordered_map<std::string, std::vector<int>> waiting;            // value -> nodes waiting for it
    std::priority_queue<int, std::vector<int>, std::greater<int>> queue;  // ready nodes, smallest index first
    for (int i = 0; i < n; ++i) {
        std::unordered_set<std::string> seen;
        for (const auto& in : g.node(i).input()) {
            if (in.empty() || ready.count(in) || !seen.insert(in).second) continue;
            ++missing[static_cast<size_t>(i)];
            waiting[in].push_back(i);
        }
        if (missing[static_cast<size_t>(i)] == 0) queue.push(i);
    }
    std::vector<const onnx::NodeProto*> order;
    while (!queue.empty()) {
        const int i = queue.top();
        queue.pop();
        order.push_back(&g.node(i));
        for (const auto& out : g.node(i).output()) {
            if (out.empty() || !ready.insert(out).second) continue;
            auto it = waiting.find(out);
            if (it == waiting.end()) continue;
            for (int k : it->second)
                if (--missing[static_cast<size_t>(k)] == 0) queue.push(k);
            waiting.erase(it);
        }
    }
    if (static_cast<int>(order.size()) < n) {
        for (int i = 0; i < n; ++i) {
            if (missing[static_cast<size_t>(i)] == 0) continue;
            const onnx::NodeProto& node = g.node(i);
            std::string absent;
            for (const auto& in : node.input())
                if (!in.empty() && !ready.count(in)) absent = in;
            STOF_FAIL("node '{}' ({}) reads '{}', which no node, input or initializer defines (or the graph has a cycle)",
                      node.name(), node.op_type(), absent);
        }
    }
    return order;
}

void set_type_from_value_info(ir::Value& v, const onnx::ValueInfoProto& info) {
    if (!info.has_type() || !info.type().has_tensor_type()) {
        STOF_FAIL("input '{}' is not a tensor (sequences, maps and optionals are not supported)", info.name());
    }
    const auto& tt = info.type().tensor_type();
    STOF_CHECK(tt.has_elem_type(), "input '{}' has no element type", info.name());
    v.dtype = dtype_from_onnx(tt.elem_type(), "input '" + info.name() + "'");
    if (!tt.has_shape()) return;  // rank unknown: must come from --shape or the input file
    for (const auto& d : tt.shape().dim()) {
        if (d.has_dim_value()) {
            STOF_CHECK(d.dim_value() >= 0, "input '{}' has a negative dimension", info.name());
            v.shape.push_back(d.dim_value());
            v.dim_names.emplace_back();
        } else {
            v.shape.push_back(-1);
            v.dim_names.push_back(d.has_dim_param() ? d.dim_param() : std::string("?"));
        }
    }
    v.shape_known = true;
    for (int64_t d : v.shape) v.shape_known = v.shape_known && d >= 0;
}

}  // namespace

ir::Graph import_onnx_bytes(const std::string& bytes, const std::string& base_dir, const std::string& what) {
    onnx::ModelProto model;
    {
        google::protobuf::io::CodedInputStream stream(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                      static_cast<int>(std::min<size_t>(bytes.size(), INT32_MAX)));
        stream.SetTotalBytesLimit(INT32_MAX);
        STOF_CHECK(bytes.size() < INT32_MAX,
                   "{}: the model file is larger than 2 GB; store its weights as external data "
                   "(onnx.save_model(..., save_as_external_data=True))",
                   what);
        STOF_CHECK(model.ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage(),
                   "{}: not a valid ONNX model (the protobuf does not parse: truncated or corrupt file?)", what);
    }
    STOF_CHECK(model.has_graph(), "{}: the model has no graph", what);

    int64_t opset = -1;
    for (const auto& o : model.opset_import())
        if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
    STOF_CHECK(opset >= 0, "{}: the model imports no default-domain (ai.onnx) opset", what);
    STOF_CHECK(opset >= kMinOpset && opset <= kMaxOpset,
               "{}: opset {} is not supported (stofc reads opsets {} to {}); re-export with "
               "torch.onnx.export(..., opset_version=17) or 18",
               what, opset, kMinOpset, kMaxOpset);

    const onnx::GraphProto& gp = model.graph();
    ir::Graph g;
    g.name = gp.name().empty() ? "model" : gp.name();
    g.opset = opset;
    std::unordered_map<std::string, ir::ValueId> ids;

    for (const auto& init : gp.initializer()) {
        STOF_CHECK(!init.name().empty(), "{}: an initializer has no name", what);
        STOF_CHECK(!ids.count(init.name()), "{}: two initializers are named '{}'", what, init.name());
        Tensor t = tensor_from_onnx(init, base_dir);
        ir::Value v;
        v.name = init.name();
        v.dtype = t.dtype;
        v.shape = t.shape;
        v.shape_known = true;
        v.data = std::make_shared<const Tensor>(std::move(t));
        const std::string name = v.name;
        ids[name] = g.add_value(std::move(v));
    }
    STOF_CHECK(gp.sparse_initializer_size() == 0, "{}: sparse initializers are not supported", what);
    std::unordered_set<std::string> input_names;
    for (const auto& in : gp.input()) {
        STOF_CHECK(input_names.insert(in.name()).second, "{}: two graph inputs are named '{}'", what, in.name());
        if (ids.count(in.name())) continue;  // an initializer listed as input (IR < 4 style): a constant
        STOF_CHECK(!in.name().empty(), "{}: a graph input has no name", what);
        ir::Value v;
        v.name = in.name();
        set_type_from_value_info(v, in);
        const ir::ValueId id = g.add_value(std::move(v));
        ids[in.name()] = id;
        g.inputs.push_back(id);
    }

    std::unordered_set<std::string> ready;
    for (const auto& [name, id] : ids) ready.insert(name);
    std::unordered_set<std::string> node_names;
    int unnamed = 0;
    ImportContext ctx{g, opset};
    for (const onnx::NodeProto* np : topological_nodes(gp, ready)) {
        std::string name = np->name();
        if (name.empty() || node_names.count(name)) {
            const std::string base = name.empty() ? np->op_type() : name;
            do name = fmt::format("{}_{}", base, unnamed++);
            while (node_names.count(name));
        }
        node_names.insert(name);
        const std::string label = fmt::format("{} node '{}'", np->op_type(), name);
        const std::string domain = np->domain().empty() ? "ai.onnx" : np->domain();

        for (const auto& f : model.functions())
            if (f.name() == np->op_type() && f.domain() == np->domain())
                STOF_FAIL("{}: calls the model-local function '{}.{}'; stofc does not inline ONNX functions", label, f.domain(),
                          f.name());
        STOF_CHECK(domain == "ai.onnx",
                   "{}: op '{}' from domain '{}' is not supported (stofc reads the default ai.onnx domain, opsets {}-{}). "
                   "Export without runtime-specific optimisations",
                   label, np->op_type(), domain, kMinOpset, kMaxOpset);

        if (np->op_type() == "Constant") {
            STOF_CHECK(np->attribute_size() == 1 && np->output_size() == 1, "{}: needs one value attribute", label);
            const auto& a = np->attribute(0);
            Tensor t;
            if (a.name() == "value") {
                t = tensor_from_onnx(a.t(), base_dir);
            } else if (a.name() == "value_float") {
                t = Tensor(DType::f32, {});
                t.data<float>()[0] = a.f();
            } else if (a.name() == "value_int") {
                t = Tensor(DType::i64, {});
                t.data<int64_t>()[0] = a.i();
            } else if (a.name() == "value_floats") {
                t = Tensor(DType::f32, {a.floats_size()});
                for (int i = 0; i < a.floats_size(); ++i) t.data<float>()[i] = a.floats(i);
            } else if (a.name() == "value_ints") {
                t = Tensor(DType::i64, {a.ints_size()});
                for (int i = 0; i < a.ints_size(); ++i) t.data<int64_t>()[i] = a.ints(i);
            } else {
                STOF_FAIL("{}: attribute '{}' is not supported", label, a.name());
            }
            const std::string& out = np->output(0);
            STOF_CHECK(!ids.count(out), "{}: redefines '{}'", label, out);
            ir::Value v;
            v.name = out;
            v.dtype = t.dtype;
            v.shape = t.shape;
            v.shape_known = true;
            v.data = std::make_shared<const Tensor>(std::move(t));
            ids[out] = g.add_value(std::move(v));
            continue;
        }

        const OnnxOp* entry = find_onnx_op(np->op_type(), opset);
        if (!entry) {
            bool other_opset = false;
            for (int64_t o = 1; o <= kMaxOpset; ++o) other_opset = other_opset || find_onnx_op(np->op_type(), o);
            if (other_opset)
                STOF_FAIL("{}: op '{}' is not supported at opset {} (domain ai.onnx)", label, np->op_type(), opset);
            STOF_FAIL("{}: op '{}' (domain ai.onnx, opset {}) is not supported. Supported ops: {}", label, np->op_type(), opset,
                      known_onnx_ops());
        }

        ir::Node n;
        n.op = entry->op;
        n.name = name;
        for (const auto& in : np->input()) n.inputs.push_back(in.empty() ? ir::kNoValue : ids.at(in));
        while (!n.inputs.empty() && n.inputs.back() == ir::kNoValue) n.inputs.pop_back();
        for (const auto& a : np->attribute()) {
            STOF_CHECK(!a.name().empty(), "{}: an attribute has no name", label);
            STOF_CHECK(accepts_attribute(*entry, a.name()), "{}: op '{}' has no attribute '{}'{}{}", label, np->op_type(),
                       a.name(), entry->attrs.empty() ? " (it takes none)" : " (it takes: ",
                       entry->attrs.empty() ? std::string() : std::string(entry->attrs) + ")");
            STOF_CHECK(!n.attrs.has(a.name()), "{}: attribute '{}' is given twice", label, a.name());
            n.attrs.set(a.name(), attr_from_onnx(a, label, base_dir));
        }
        int last_output = np->output_size() - 1;
        while (last_output >= 0 && np->output(last_output).empty()) --last_output;
        for (int k = 0; k <= last_output; ++k) {
            std::string out = np->output(k);
            if (out.empty()) out = g.unique_name(name + "_unused_output");
            STOF_CHECK(!ids.count(out), "{}: redefines '{}'", label, out);
            ir::Value v;
            v.name = out;
            const ir::ValueId id = g.add_value(std::move(v));
            ids[out] = id;
            n.outputs.push_back(id);
        }
        if (entry->fixup) entry->fixup(ctx, n);
        const ir::OpInfo& info = ir::op_info(n.op);
        const int nin = static_cast<int>(n.inputs.size()), nout = static_cast<int>(n.outputs.size());
        STOF_CHECK(nin >= info.min_inputs && (info.max_inputs < 0 || nin <= info.max_inputs),
                   "{}: has {} inputs; {} takes {} to {}", label, nin, np->op_type(), info.min_inputs,
                   info.max_inputs < 0 ? std::string("any") : std::to_string(info.max_inputs));
        STOF_CHECK(nout >= info.min_outputs && (info.max_outputs < 0 || nout <= info.max_outputs),
                   "{}: has {} outputs; stofc supports {} to {}", label, nout, info.min_outputs,
                   info.max_outputs < 0 ? std::string("any") : std::to_string(info.max_outputs));
        for (int k = 0; k < nin; ++k)
            STOF_CHECK(n.inputs[static_cast<size_t>(k)] != ir::kNoValue || k >= info.min_inputs,
                       "{}: required input {} is empty", label, k);
        g.nodes.push_back(std::move(n));
    }

    std::unordered_set<std::string> output_names;
    for (const auto& out : gp.output()) {
        auto it = ids.find(out.name());
        STOF_CHECK(it != ids.end(), "{}: graph output '{}' is not produced by any node", what, out.name());
        STOF_CHECK(output_names.insert(out.name()).second, "{}: the graph lists output '{}' twice", what, out.name());
        g.outputs.push_back(it->second);
    }
    STOF_CHECK(!g.outputs.empty(), "{}: the graph has no outputs", what);
    return g;
}

ir::Graph import_onnx_file(const std::string& path) {
    namespace fs = std::filesystem;
    const RegularFile f(path, "model file");
    STOF_CHECK(f.size() < INT32_MAX,
               "{}: the model file is {} bytes, larger than 2 GB; store its weights as external data "
               "(onnx.save_model(..., save_as_external_data=True))",
               path, f.size());
    std::error_code ec;
    ProgressPhase phase(fmt::format("importing {} ({:.1f} MB)", path, static_cast<double>(f.size()) / 1e6));
    const fs::path dir = fs::canonical(fs::absolute(path).parent_path(), ec);
    STOF_CHECK(!ec, "cannot resolve the model file's folder '{}': {}", path, ec.message());
    return import_onnx_bytes(f.read_all(), dir.string(), path);
}

}  // namespace stof
