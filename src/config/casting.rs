//! Casting: the characters of a cast file, and which voice reads a segment
//! (by character, cast file, gender, then dialogue or narrator voice).

use std::path::Path;

use super::{CastMember, ConfigError, VoicesConfig, keys};
use crate::synth::VoiceSettings;
use crate::text::{Gender, Segment, SegmentKind};

/// One voice of `first` and `more` for the character `name`, by a hash of
/// the name that is the same on every machine and in every run (FNV-1a).
fn pick<'a>(name: &str, first: &'a str, more: &'a [String]) -> &'a str {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    match (hash % (more.len() as u64 + 1)) as usize {
        0 => first,
        k => &more[k - 1],
    }
}

impl VoicesConfig {
    /// Adds the characters of a cast file (genders and `voice` entries).
    pub fn apply_cast(&mut self, file: &Path, cast: &crate::text::Cast) -> Result<(), ConfigError> {
        let members = cast.characters.iter().map(|c| {
            let member = CastMember {
                gender: c.gender,
                voice: c.voice.clone(),
            };
            (c.name.clone(), member)
        });
        self.set_cast(&file.display().to_string(), members)
    }

    /// Adds the characters of a cast file (`file` names it in errors):
    /// (canonical name, member). A `voice` must name a voice of this file.
    pub fn set_cast(
        &mut self,
        file: &str,
        members: impl IntoIterator<Item = (String, CastMember)>,
    ) -> Result<(), ConfigError> {
        for (name, member) in members {
            if let Some(voice) = &member.voice
                && !self.voices.contains_key(voice)
            {
                return Err(ConfigError::Invalid {
                    file: file.to_owned(),
                    key: format!("character.{name}.voice"),
                    message: format!(
                        "unknown voice '{voice}' (known in {}: {})",
                        self.source,
                        keys(&self.voices)
                    ),
                });
            }
            self.cast.insert(name, member);
        }
        Ok(())
    }

    /// The voice (by name) that reads a segment of the script: as
    /// [`VoicesConfig::voice_for`], and a quote of someone the book does not
    /// name (`她父亲说：`) by the voice of that one's gender.
    pub fn segment_voice(&self, segment: &Segment) -> &str {
        if segment.kind == SegmentKind::Dialogue && segment.gender_unsure {
            return self.voice_for(segment.kind, None);
        }
        if segment.kind == SegmentKind::Dialogue
            && segment.speaker.is_none()
            && let Some(voice) = match segment.unnamed {
                Some(Gender::Male) => self.casting.male.as_deref(),
                Some(Gender::Female) => self.casting.female.as_deref(),
                _ => None,
            }
        {
            return voice;
        }
        self.voice_for(segment.kind, segment.speaker.as_deref())
    }

    /// The voice (by name) that reads a segment: the character's voice from
    /// `[casting.characters]`, then from the cast file, then (the narrator of
    /// a book in the first person, 我, of no gender) the narrator's voice, then
    /// by the character's gender, then (dialogue of unknown gender or
    /// speaker) the `unknown` voice, then the dialogue or narrator voice.
    pub fn voice_for(&self, kind: SegmentKind, speaker: Option<&str>) -> &str {
        if let Some(speaker) = speaker {
            if let Some(voice) = self.casting.characters.get(speaker) {
                return voice;
            }
            let member = self.cast.get(speaker);
            if let Some(voice) = member.and_then(|m| m.voice.as_deref()) {
                return voice;
            }
            if kind == SegmentKind::Dialogue {
                let c = &self.casting;
                // The narrator of a book told in the first person says their
                // own lines in the narration's voice, unless given a gender.
                if speaker == crate::text::speaker::NARRATOR
                    && member.is_none_or(|m| m.gender == Gender::Unknown)
                {
                    return &c.narrator;
                }
                let by_gender = match member.map(|m| m.gender) {
                    Some(Gender::Male) => c.male.as_deref().map(|v| pick(speaker, v, &c.male_more)),
                    Some(Gender::Female) => c
                        .female
                        .as_deref()
                        .map(|v| pick(speaker, v, &c.female_more)),
                    Some(Gender::Unknown) | None => None,
                };
                if let Some(voice) = by_gender {
                    return voice;
                }
            }
        }
        if kind == SegmentKind::Dialogue
            && let Some(unknown) = &self.casting.unknown
        {
            return unknown;
        }
        match (kind, &self.casting.dialogue) {
            (SegmentKind::Dialogue, Some(dialogue)) => dialogue,
            _ => &self.casting.narrator,
        }
    }

    /// Settings of a named voice (the name must come from this config).
    pub fn voice_settings(&self, name: &str) -> VoiceSettings {
        let v = &self.voices[name];
        VoiceSettings {
            name: name.to_owned(),
            voice: v.voice.clone(),
            speed: v.speed,
            pitch: v.pitch,
            style: v.style.clone(),
            role: v.role.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::{MIXED, env_with_key};

    #[test]
    fn casting_by_character_cast_file_and_gender() {
        let mut config = VoicesConfig::parse_with_env(MIXED, "m.toml", &env_with_key).unwrap();
        let d = SegmentKind::Dialogue;
        config
            .set_cast(
                "cast.toml",
                [
                    (
                        "少安".to_owned(),
                        CastMember {
                            gender: Gender::Male,
                            voice: None,
                        },
                    ),
                    (
                        "润叶".to_owned(),
                        CastMember {
                            gender: Gender::Female,
                            voice: None,
                        },
                    ),
                    (
                        "老王".to_owned(),
                        CastMember {
                            gender: Gender::Male,
                            voice: Some("narrator".into()),
                        },
                    ),
                ],
            )
            .unwrap();
        assert_eq!(config.voice_for(d, Some("毛仲")), "narrator");
        assert_eq!(config.voice_for(d, Some("润叶")), "heroine");
        assert_eq!(config.voice_for(d, Some("少安")), "hero");
        assert_eq!(config.voice_for(d, Some("老王")), "narrator");
        assert_eq!(config.voice_for(d, None), "hero");
        assert_eq!(
            config.voice_for(SegmentKind::Narration, Some("润叶")),
            "narrator"
        );
        // Someone unnamed of a known gender (她父亲说：) gets that gender's voice.
        let quote = |speaker: Option<&str>, unnamed| Segment {
            kind: d,
            speaker: speaker.map(str::to_owned),
            unnamed,
            gender_unsure: false,
            paragraph: 1,
            text: "“走吧。”".into(),
        };
        assert_eq!(
            config.segment_voice(&quote(None, Some(Gender::Female))),
            "heroine"
        );
        assert_eq!(
            config.segment_voice(&quote(None, Some(Gender::Male))),
            "hero"
        );
        assert_eq!(config.segment_voice(&quote(None, None)), "hero");
        assert_eq!(config.segment_voice(&quote(Some("毛仲"), None)), "narrator");
        // A guess between a man and a woman: a voice of neither.
        let unsure = Segment {
            gender_unsure: true,
            ..quote(Some("润叶"), None)
        };
        assert_eq!(config.voice_for(d, None), "hero");
        assert_eq!(config.segment_voice(&quote(Some("润叶"), None)), "heroine");
        assert_eq!(config.segment_voice(&unsure), config.voice_for(d, None));
        let err = config
            .set_cast(
                "cast.toml",
                [(
                    "甲".to_owned(),
                    CastMember {
                        gender: Gender::Unknown,
                        voice: Some("ghost".into()),
                    },
                )],
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("cast.toml: character.甲.voice: unknown voice 'ghost'"),
            "{err}"
        );
    }

    #[test]
    fn characters_of_a_gender_share_out_its_voices_by_name() {
        let text = MIXED.replace(
            "female = \"heroine\"\n",
            "female = \"heroine\"\nmale_more = [\"narrator\"]\n",
        );
        let mut config = VoicesConfig::parse_with_env(&text, "m.toml", &env_with_key).unwrap();
        let men: Vec<String> = "甲乙丙丁戊己庚辛壬癸"
            .chars()
            .map(|c| format!("老{c}"))
            .collect();
        config
            .set_cast(
                "cast.toml",
                men.iter().map(|n| {
                    (
                        n.clone(),
                        CastMember {
                            gender: Gender::Male,
                            voice: None,
                        },
                    )
                }),
            )
            .unwrap();
        let d = SegmentKind::Dialogue;
        let voices: Vec<&str> = men.iter().map(|n| config.voice_for(d, Some(n))).collect();
        // Both voices are used, each man keeps his, and the hash is fixed
        // (FNV-1a of the name's UTF-8: the same on every machine).
        assert!(
            voices.contains(&"hero") && voices.contains(&"narrator"),
            "{voices:?}"
        );
        let again: Vec<&str> = men.iter().map(|n| config.voice_for(d, Some(n))).collect();
        assert_eq!(voices, again);
        let fnv = |s: &str| {
            s.bytes().fold(0xcbf29ce484222325u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
            })
        };
        for (n, v) in men.iter().zip(&voices) {
            assert_eq!(*v, if fnv(n) % 2 == 0 { "hero" } else { "narrator" }, "{n}");
        }
        // A voice the file does not have is a setting error naming the key.
        let bad = MIXED.replace(
            "female = \"heroine\"\n",
            "female = \"heroine\"\nfemale_more = [\"ghost\"]\n",
        );
        let err = VoicesConfig::parse_with_env(&bad, "m.toml", &env_with_key)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("m.toml:")
                && err.contains("casting.female_more: unknown voice 'ghost'"),
            "{err}"
        );
    }

    #[test]
    fn the_narrator_of_a_book_in_the_first_person_reads_their_own_lines() {
        let mut config = VoicesConfig::parse_with_env(MIXED, "m.toml", &env_with_key).unwrap();
        let d = SegmentKind::Dialogue;
        // Found, of no gender: the narrator's voice, not the dialogue voice.
        assert_eq!(config.voice_for(d, Some("我")), "narrator");
        assert_eq!(config.voice_for(d, Some("甲")), "hero");
        // Given a gender in the cast file: that gender's voice.
        let member = CastMember {
            gender: Gender::Female,
            voice: None,
        };
        config
            .set_cast("cast.toml", [("我".to_owned(), member)])
            .unwrap();
        assert_eq!(config.voice_for(d, Some("我")), "heroine");
    }

    #[test]
    fn unknown_gender_and_unknown_speaker_get_the_unknown_voice() {
        let text = MIXED.replace(
            "female = \"heroine\"\n",
            "female = \"heroine\"\nunknown = \"narrator\"\n",
        );
        let mut config = VoicesConfig::parse_with_env(&text, "m.toml", &env_with_key).unwrap();
        let member = |gender: Gender| CastMember {
            gender,
            voice: None,
        };
        config
            .set_cast(
                "cast.toml",
                [
                    ("甲".to_owned(), member(Gender::Unknown)),
                    ("乙".to_owned(), member(Gender::Female)),
                    ("丙".to_owned(), member(Gender::Male)),
                ],
            )
            .unwrap();
        let d = SegmentKind::Dialogue;
        // Never the male dialogue voice for a speaker nobody knows the gender of.
        assert_eq!(config.voice_for(d, Some("甲")), "narrator");
        assert_eq!(config.voice_for(d, None), "narrator");
        assert_eq!(config.voice_for(d, Some("无名")), "narrator");
        assert_eq!(config.voice_for(d, Some("乙")), "heroine");
        assert_eq!(config.voice_for(d, Some("丙")), "hero");
        // A voice the file does not have is an error naming the key.
        let bad = MIXED.replace(
            "female = \"heroine\"\n",
            "female = \"heroine\"\nunknown = \"ghost\"\n",
        );
        let err = VoicesConfig::parse_with_env(&bad, "m.toml", &env_with_key)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("casting.unknown") && err.contains("ghost"),
            "{err}"
        );
    }
}
