// How a rendered chat prompt ends: transformers' apply_chat_template(add_generation_prompt=...,
// continue_final_message=...) as one value, since the two flags exclude each other.
#pragma once

namespace weft {

enum class ChatPromptEnd {
  kNone,                  // add_generation_prompt=False: the conversation as the template renders it
  kGenerationPrompt,      // add_generation_prompt=True: plus the header that opens the assistant's turn
  kContinueFinalMessage,  // continue_final_message=True: cut right after the final message's content
                          // (its end-of-turn markup dropped), so the model continues that message
};

}  // namespace weft
