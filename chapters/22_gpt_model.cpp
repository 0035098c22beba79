// Chapter 22: Raschka's GPT model (his chapter 4, In [1]-[32], and exercises 4.1-4.2), digit for
// digit on the library's attention core. Prose: docs/chapters/22_gpt_model.md.
#include <memory>
#include <string>

#include "attn/model/generate.hpp"
#include "attn/model/gpt_model.hpp"
#include "attn/model/layer_norm.hpp"
#include "attn/core/elementwise.hpp"
#include "attn/print/python.hpp"
#include "textbook/tokenizer_data.hpp"
#include "22_gpt_model.hpp"

int main(int argc, char** argv) {
    return textbook::run(argc, argv, {.name = "22_gpt_model", .dropout = true, .seeded = true}, [](textbook::Chapter& ch) {
        ch.book("rch04-In01,rch04x-In01", "the versions: no torch here; the library reproduces torch 1.13's CPU arithmetic",
                "attn (C++), in place of torch 1.13.1");
        ch.step("dummy");
        //! [dummy]
        attn::GPTConfig cfg = attn::GPT_CONFIG_124M;
        const attn::GPT2Tokenizer& tokenizer = textbook::gpt2_tokenizer();  // tiktoken.get_encoding("gpt2")
        const attn::LongTensor batch = textbook::ids_tensor({tokenizer.encode("Every effort moves you"),
                                                             tokenizer.encode("Every day holds a")});
        attn::manual_seed(ch.seed(123));
        auto dummy = std::make_unique<ch22::DummyGPTModel>(cfg);  // 309 MB, freed below
        attn::Generator after_init = attn::default_generator();  // a copy: the same draws again
        const attn::Tensor logits = (*dummy)(batch, attn::default_generator());
        dummy->drop_emb.backend = attn::nn::BernoulliBackend::mkl;
        const attn::Tensor logits_mkl = (*dummy)(batch, after_init);
        dummy.reset();
        //! [dummy]
        ch.book("rch04-In04", "print(batch)", attn::repr(batch));
        const std::string shape = "Output shape: " + attn::repr(attn::shape_of(logits)) + "\n";
        ch.book("rch04-In05,o22-In02", "[portable backend] DummyGPTModel(GPT_CONFIG_124M)(batch), seed 123", shape + attn::repr(logits));
        ch.book("rch04-Note", "[MKL backend] the same", shape + attn::repr(logits_mkl));

        ch.step("layer-norm");
        //! [layer-norm]
        attn::manual_seed(ch.seed(123));
        const attn::Tensor batch_example = attn::randn({2, 5});
        const attn::nn::Linear linear(5, 6);
        const attn::Tensor out = attn::relu(linear(batch_example));  // nn.Sequential(nn.Linear(5, 6), nn.ReLU())
        const attn::Tensor mean = attn::mean(out, -1, true), var = attn::var(out, -1, true, true);
        const attn::Tensor out_norm = (out - mean) / xt::sqrt(var);
        const attn::Tensor mean_norm = attn::mean(out_norm, -1, true), var_norm = attn::var(out_norm, -1, true, true);
        //! [layer-norm]
        const auto labelled = [](const char* label, const attn::Tensor& t) { return std::string(label) + ":\n " + attn::repr(t); };
        ch.book("rch04-In06", "out = layer(batch_example)", attn::repr(out));
        ch.book("rch04-In07", "out.mean(dim=-1, keepdim=True), out.var(dim=-1, keepdim=True)", labelled("Mean", mean) + "\n" + labelled("Variance", var));
        ch.book("rch04-In08-1", "out_norm = (out - mean) / torch.sqrt(var)", labelled("Normalized layer outputs", out_norm));
        ch.book("rch04-In08-2,o22-In03", "out_norm.mean(dim=-1, keepdim=True)", labelled("Mean", mean_norm));
        ch.book("rch04-In08-3", "out_norm.var(dim=-1, keepdim=True)", labelled("Variance", var_norm));
        attn::printoptions().sci_mode = false;  // torch.set_printoptions(sci_mode=False), for the rest of the chapter
        ch.book("rch04-In09-1,o22-In04", "the mean again, sci_mode=False", labelled("Mean", mean_norm));
        ch.book("rch04-In09-2", "the variance again, sci_mode=False", labelled("Variance", var_norm));
        //! [layer-norm.2]
        const attn::LayerNorm ln(6);
        const attn::Tensor out_ln = ln(out);
        //! [layer-norm.2]
        ch.book("rch04-In12-1,o22-In05", "LayerNorm(emb_dim=6)(out).mean(dim=-1, keepdim=True)", labelled("Mean", attn::mean(out_ln, -1, true)));
        ch.book("rch04-In12-2", "its var(dim=-1, unbiased=False, keepdim=True)", labelled("Variance", attn::var(out_ln, -1, false, true)));

        ch.step("gelu");
        //! [gelu]
        const attn::Tensor x = ch22::linspace(-3.0f, 3.0f, 100);
        const attn::Tensor y_gelu = attn::GELU()(x), y_relu = attn::relu(x);
        const attn::FeedForward ffn(cfg);
        const attn::Tensor ff_out = ffn(attn::rand({2, 3, 768}));
        //! [gelu]
        ch.book("rch04-In14", "GELU and ReLU on torch.linspace(-3, 3, 100): the figure", "GELU()(x) and nn.ReLU()(x), 100 points each (drawn below)",
                {{"x", x}, {"gelu", y_gelu}, {"relu", y_relu}});
        ch.book("rch04-In16", "GPT_CONFIG_124M[\"emb_dim\"]", std::to_string(cfg.emb_dim));
        ch.book("rch04-In17", "ffn(torch.rand(2, 3, 768)).shape", attn::repr(attn::shape_of(ff_out)));

        ch.step("shortcut");
        //! [shortcut]
        const attn::Tensor sample_input = attn::tensor({{1.0f, 0.0f, -1.0f}});
        attn::manual_seed(ch.seed(123));
        ch22::ExampleDeepNeuralNetwork model_without_shortcut({3, 3, 3, 3, 3, 1}, false);
        const std::string without = model_without_shortcut.print_gradients(sample_input);
        attn::manual_seed(ch.seed(123));
        ch22::ExampleDeepNeuralNetwork model_with_shortcut({3, 3, 3, 3, 3, 1}, true);
        const std::string with = model_with_shortcut.print_gradients(sample_input);
        //! [shortcut]
        ch.book("rch04-In19,o22-In06", "print_gradients(model_without_shortcut, sample_input)", without);
        ch.book("rch04-In20,o22-In07", "print_gradients(model_with_shortcut, sample_input)", with);

        ch.step("block");
        //! [block]
        attn::manual_seed(ch.seed(123));
        const attn::Tensor x_block = attn::rand({2, 4, 768});
        attn::TransformerBlock block(cfg);
        const attn::Tensor output = block(x_block);
        //! [block]
        ch.book("rch04-In22", "TransformerBlock(GPT_CONFIG_124M)(torch.rand(2, 4, 768))",
                "Input shape: " + attn::repr(attn::shape_of(x_block)) + "\nOutput shape: " + attn::repr(attn::shape_of(output)));
        ch.book("rch04x-In02", "exercise 4.1: print(block)", attn::repr(block));
        ch.book("rch04x-In03", "sum(p.numel() for p in block.ff.parameters())",
                "Total number of parameters in feed forward module: " + ch22::grouped(ch22::numel_of(block.ff)));
        ch.book("rch04x-In04", "sum(p.numel() for p in block.att.parameters())",
                "Total number of parameters in attention module: " + ch22::grouped(ch22::numel_of(block.att)));

        ch.step("model");
        //! [model]
        attn::manual_seed(ch.seed(123));
        cfg.backend = ch.backend();
        attn::GPTModel model(cfg);
        const attn::Tensor logits_train = model(batch);  // training mode: dropout 0.1
        const std::size_t total_params = ch22::numel_of(model);
        const std::size_t total_params_gpt2 = total_params - ch22::numel_of(model.out_head);
        //! [model]
        ch.book("rch04-In24", std::string("[") + ch.backend_name() + " backend] GPTModel(GPT_CONFIG_124M)(batch), seed 123",
                "Input batch:\n " + attn::repr(batch) + "\n\nOutput shape: " + attn::repr(attn::shape_of(logits_train)) +
                    "\n" + attn::repr(logits_train));
        ch.book("rch04-In25", "total_params", "Total number of parameters: " + ch22::grouped(total_params));
        ch.book("rch04-In26", "the shapes of tok_emb.weight and out_head.weight",
                "Token embedding layer shape: " + attn::repr(attn::shape_of(model.tok_emb.weight)) +
                    "\nOutput layer shape: " + attn::repr(attn::shape_of(model.out_head.weight)));
        ch.book("rch04-In27", "total_params - out_head's", "Number of trainable parameters considering weight tying: " + ch22::grouped(total_params_gpt2));
        ch.book("rch04-In28", "total_params * 4 bytes, in MB", "Total size of the model: " + ch22::megabytes(total_params));
        std::string sizes;
        for (const char* name : {"gpt2-small", "gpt2-medium", "gpt2-large", "gpt2-xl"}) {
            const attn::GPTParameterCount n = attn::parameter_count(attn::get_config(cfg, name));
            sizes += std::string(sizes.empty() ? "" : "\n\n\n") + name + ":\nTotal number of parameters: " + ch22::grouped(n.total) +
                     "\nNumber of trainable parameters considering weight tying: " + ch22::grouped(n.total - n.out_head) +
                     "\nTotal size of the model: " + ch22::megabytes(n.total);
        }
        ch.book("rch04x-In06", "exercise 4.2: the four GPT-2 sizes, counted (not built)", sizes);

        ch.step("generate");
        //! [generate]
        model.eval();  // disable dropout
        const attn::Tensor logits_eval = model(batch);
        const std::vector<std::int64_t> encoded = tokenizer.encode("Hello, I am");
        const attn::LongTensor encoded_tensor = textbook::ids_tensor({encoded});  // torch.tensor(encoded).unsqueeze(0)
        const attn::LongTensor out6 = attn::generate_text_simple(model, encoded_tensor, 6, cfg.context_length);
        const attn::LongTensor out10 = attn::generate_text_simple(model, out6, 4, cfg.context_length);  // gpt.py's 10
        //! [generate]
        ch.book("o22-In08", "model.eval(); model(batch)", attn::repr(logits_eval));
        ch.book("rch04-In30", "encoded, encoded_tensor.shape",
                "encoded: " + attn::repr_list(encoded) + "\nencoded_tensor.shape: " + attn::repr(attn::shape_of(encoded_tensor)));
        ch.book("rch04-In31", "generate_text_simple(model, encoded_tensor, max_new_tokens=6)",
                "Output: " + attn::repr(out6) + "\nOutput length: " + std::to_string(out6.shape()[1]));
        ch.book("rch04-In32", "tokenizer.decode(out.squeeze(0).tolist())", tokenizer.decode(textbook::row_ids(out6, 0), attn::DecodeErrors::replace));
        ch.book("o22-In09", "4 tokens more: gpt.py's 10 new tokens", "Output: " + attn::repr(out10));
        ch.show("tokenizer.decode of the 10 new tokens", tokenizer.decode(textbook::row_ids(out10, 0), attn::DecodeErrors::replace));
        attn::printoptions().sci_mode.reset();
    });
}
