-- librate's Redis scripts, the last part of every one: decides each key of KEYS in turn,
-- all at the one now. One key's reply is its decision; several keys' is the array of
-- their decisions, each in the position of its key, where a key that holds another
-- algorithm's state or another type is that key's error alone.

if #KEYS == 1 then
    return decide(KEYS[1])
end
local decisions = {}
for i = 1, #KEYS do
    decisions[i] = decide(KEYS[i])
end
return decisions
